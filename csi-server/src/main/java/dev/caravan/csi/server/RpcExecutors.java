package dev.caravan.csi.server;

import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.NodeGrpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Where RPC handlers run: on the Netty event loop that read the call, for the few calls that never
 * wait; otherwise on bounded pools of platform threads, one per CSI service.
 *
 * <p>Inline (on the event loop): calls whose whole work is building an answer from memory
 * ({@link #ALWAYS_INLINE}), plus those the plugin names because its backend answers them from memory
 * and local syscalls that do not wait for a disk, a network or another process (Probe and
 * NodeGetVolumeStats of the file backend). Each hand-off to a pool thread and back costs a thread
 * wake-up, which on a busy 2-core node is most of a no-op call's time. Anything that may block
 * (mount, mkfs, a journal write, iSCSI, ZFS, an HTTP call to an appliance) must never run there: while
 * it waits, every other call on that connection waits too.
 *
 * <p>Not virtual threads: a storage call that blocks inside native code (an FFM downcall waiting for
 * a ZFS txg sync, a write to a frozen or stalled filesystem) pins the virtual thread to its carrier,
 * and a 2-core node has two carriers, so two slow creates would stall every other RPC, Probe
 * included, and Nomad would mark the plugin unhealthy. A platform thread blocked in the kernel holds
 * only itself. Identity calls have a pool of their own, so Probe answers whatever the storage is
 * doing; node calls have theirs, so a slow controller call never delays a publish. Threads are made
 * on demand and retire when idle, so an idle plugin holds few.
 */
final class RpcExecutors implements ServerCallExecutorSupplier {
  static final int IDENTITY_THREADS = 2;
  static final int CONTROLLER_THREADS = 16;
  static final int NODE_THREADS = 16;
  private static final Duration IDLE = Duration.ofSeconds(30);

  /** Calls answered from memory alone: capabilities and names. */
  static final Set<String> ALWAYS_INLINE = Set.of(
      IdentityGrpc.getGetPluginInfoMethod().getFullMethodName(),
      IdentityGrpc.getGetPluginCapabilitiesMethod().getFullMethodName(),
      NodeGrpc.getNodeGetCapabilitiesMethod().getFullMethodName(),
      NodeGrpc.getNodeGetInfoMethod().getFullMethodName());

  /**
   * Runs a task on the calling thread. gRPC's method lookup runs on the server's default executor
   * before a call's own executor is chosen: with this one it runs on the event loop (a map lookup)
   * instead of costing one more hand-off per call.
   */
  static final Executor INLINE = Runnable::run;

  private final Set<String> inline;
  private final ExecutorService identity = pool("caravan-identity-", IDENTITY_THREADS);
  private final ExecutorService controller = pool("caravan-controller-", CONTROLLER_THREADS);
  private final ExecutorService node = pool("caravan-node-", NODE_THREADS);

  /** @param inline full method names ({@code csi.v1.Node/NodeGetVolumeStats}) to run on the event loop */
  RpcExecutors(Set<String> inline) {
    this.inline = Set.copyOf(inline);
  }

  @Override
  public <ReqT, RespT> Executor getExecutor(ServerCall<ReqT, RespT> call, Metadata metadata) {
    String method = call.getMethodDescriptor().getFullMethodName();
    if (ALWAYS_INLINE.contains(method) || inline.contains(method)) {
      return INLINE;
    }
    return switch (call.getMethodDescriptor().getServiceName()) {
      case "csi.v1.Controller" -> controller;
      case "csi.v1.Node" -> node;
      case null, default -> identity;
    };
  }

  void shutdownNow() {
    for (ExecutorService e : List.of(identity, controller, node)) {
      e.shutdownNow();
    }
  }

  private static ExecutorService pool(String prefix, int threads) {
    ThreadPoolExecutor pool = new ThreadPoolExecutor(threads, threads, IDLE.toMillis(), TimeUnit.MILLISECONDS,
        new LinkedBlockingQueue<>(), Thread.ofPlatform().name(prefix, 0).daemon(true).factory());
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }
}

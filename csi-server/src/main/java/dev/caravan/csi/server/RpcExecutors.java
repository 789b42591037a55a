package dev.caravan.csi.server;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Where RPC handlers run: bounded pools of platform threads, one per CSI service.
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

  private final ExecutorService identity = pool("caravan-identity-", IDENTITY_THREADS);
  private final ExecutorService controller = pool("caravan-controller-", CONTROLLER_THREADS);
  private final ExecutorService node = pool("caravan-node-", NODE_THREADS);

  /** For anything that is not a call of a known service (gRPC's own work, unknown methods). */
  Executor fallback() {
    return identity;
  }

  @Override
  public <ReqT, RespT> Executor getExecutor(ServerCall<ReqT, RespT> call, Metadata metadata) {
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

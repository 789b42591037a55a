package dev.caravan.csi.server;

import dev.caravan.csi.support.Failures;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.NodeGrpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Where RPC handlers run: on the Netty event loop that read the call, for the few calls that never
 * wait; otherwise on bounded pools of platform threads, one per CSI service, which a call reaches once,
 * when its request is whole.
 *
 * <p>Inline (on the event loop): calls whose whole work is building an answer from memory
 * ({@link #ALWAYS_INLINE}), plus those the plugin names because its backend answers them from memory
 * and local syscalls that do not wait for a disk, a network or another process (Probe and
 * NodeGetVolumeStats of the file backend). Each hand-off to a pool thread and back costs a thread
 * wake-up, which on a busy 2-core node is most of a no-op call's time. Anything that may block
 * (mount, mkfs, a journal write, iSCSI, ZFS, an HTTP call to an appliance) must never run there: while
 * it waits, every other call on that connection waits too.
 *
 * <p>One hand-off per call, not two. Were the pool gRPC's call executor, gRPC would schedule the start
 * of the call on it when the headers arrive and, when that had already run by the time the request's
 * body was decoded, schedule the message and the half-close again: two pool wake-ups per call. Here
 * the event loop starts the call and takes its message (the interceptors' bookkeeping and the stub
 * keeping the request: no I/O), and the half-close, which runs the handler, is the one task handed to
 * the pool; whatever the call hears after it (cancellation, completion) follows it on the pool, in
 * order, through the call's {@link SerialExecutor}. This interceptor must be the outermost, so that
 * every other interceptor's part of the handler runs on the pool too.
 *
 * <p>Not virtual threads: a storage call that blocks inside native code (an FFM downcall waiting for
 * a ZFS txg sync, a write to a frozen or stalled filesystem) pins the virtual thread to its carrier,
 * and a 2-core node has two carriers, so two slow creates would stall every other RPC, Probe
 * included, and Nomad would mark the plugin unhealthy. A platform thread blocked in the kernel holds
 * only itself. Identity calls have a pool of their own, so Probe answers whatever the storage is
 * doing; node calls have theirs, so a slow controller call never delays a publish. Threads are made
 * on demand and retire when idle, so an idle plugin holds few.
 */
final class RpcExecutors implements ServerInterceptor {
  private static final System.Logger LOG = System.getLogger(RpcExecutors.class.getName());
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
   * Runs a task on the calling thread: gRPC's executor, so that it starts every call and delivers
   * its request on the event loop that read it, and this interceptor decides where the handler runs.
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
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
      ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    ServerCall.Listener<ReqT> listener = next.startCall(call, headers);
    Executor pool = poolFor(call.getMethodDescriptor());
    return pool == null ? listener : new HandedOff<>(listener, call, new SerialExecutor(pool));
  }

  /** The pool a method's handler runs on; null for one that runs on the event loop. */
  private Executor poolFor(MethodDescriptor<?, ?> method) {
    String name = method.getFullMethodName();
    if (ALWAYS_INLINE.contains(name) || inline.contains(name)) {
      return null;
    }
    return switch (method.getServiceName()) {
      case "csi.v1.Controller" -> controller;
      case "csi.v1.Node" -> node;
      case null, default -> identity;
    };
  }

  /**
   * A call's listener whose callbacks run where they arrive (the event loop) until the half-close, and
   * from the half-close on, on the call's serial executor. All callbacks arrive on the one event loop
   * of the call's connection, so {@code handedOff} needs no synchronization.
   */
  private static final class HandedOff<ReqT> extends ServerCall.Listener<ReqT> {
    private final ServerCall.Listener<ReqT> delegate;
    private final ServerCall<ReqT, ?> call;
    private final SerialExecutor serial;
    private boolean handedOff;

    HandedOff(ServerCall.Listener<ReqT> delegate, ServerCall<ReqT, ?> call, SerialExecutor serial) {
      this.delegate = delegate;
      this.call = call;
      this.serial = serial;
    }

    @Override
    public void onMessage(ReqT message) {
      run(() -> delegate.onMessage(message));
    }

    @Override
    public void onHalfClose() {
      handedOff = true;
      try {
        serial.execute(() -> guarded(delegate::onHalfClose));
      } catch (RejectedExecutionException stopping) {
        call.close(Status.UNAVAILABLE.withDescription("the plugin is stopping"), new Metadata());
      }
    }

    @Override
    public void onCancel() {
      run(delegate::onCancel);
    }

    @Override
    public void onComplete() {
      run(delegate::onComplete);
    }

    @Override
    public void onReady() {
      run(delegate::onReady);
    }

    private void run(Runnable callback) {
      if (!handedOff) {
        callback.run();
        return;
      }
      try {
        serial.execute(() -> guarded(callback));
      } catch (RejectedExecutionException stopping) {
        // The pools are shut down: the server is stopping and the call is over for it anyway.
      }
    }

    /**
     * What gRPC's own executor path does for a callback that throws, which {@link ErrorInterceptor}
     * (RuntimeExceptions from the handler) does not cover: an Error such as a LinkageError would
     * otherwise end the pool thread and leave the call open until the client's deadline.
     */
    private void guarded(Runnable callback) {
      try {
        callback.run();
      } catch (Throwable t) {
        LOG.log(System.Logger.Level.ERROR, "unexpected failure in " + call.getMethodDescriptor().getFullMethodName(), t);
        try {
          call.close(Status.INTERNAL.withDescription(Failures.internal(t)), new Metadata());
        } catch (RuntimeException alreadyClosed) {
          LOG.log(System.Logger.Level.DEBUG, "call already closed", alreadyClosed);
        }
        if (t instanceof VirtualMachineError fatal) {
          throw fatal;
        }
      }
    }
  }

  void shutdownNow() {
    for (ExecutorService e : List.of(identity, controller, node)) {
      e.shutdownNow();
    }
  }

  /**
   * Takes no new calls and lets the running ones finish for up to {@code grace}, then interrupts
   * what is left. A call whose client has gone (a deadline, a disconnect) no longer holds the server
   * open, yet its handler still answers through an event loop: the loops stop after this.
   */
  void stop(Duration grace) {
    List<ExecutorService> pools = List.of(identity, controller, node);
    pools.forEach(ExecutorService::shutdown);
    long deadline = System.nanoTime() + grace.toNanos();
    try {
      for (ExecutorService e : pools) {
        e.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      shutdownNow();
    }
  }

  private static ExecutorService pool(String prefix, int threads) {
    ThreadPoolExecutor pool = new ThreadPoolExecutor(threads, threads, IDLE.toMillis(), TimeUnit.MILLISECONDS,
        new LinkedBlockingQueue<>(), Thread.ofPlatform().name(prefix, 0).daemon(true).factory());
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }
}

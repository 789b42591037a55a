package dev.caravan.csi.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.GetPluginInfoRequest;
import dev.caravan.csi.v1.GetPluginInfoResponse;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeResponse;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.ProbeResponse;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where calls run (event loop or pool) and the per-RPC log line, over a real unix socket with a real
 * gRPC client.
 */
class RpcTransportTest {
  @TempDir Path tmp;
  private final Lines lines = new Lines();

  @BeforeEach
  void capture() {
    RpcLog.LINES.addHandler(lines);
  }

  @AfterEach
  void release() {
    RpcLog.LINES.removeHandler(lines);
  }

  @Test
  void callsThatNeverWaitRunOnTheEventLoopTheRestOnTheirServicesPool() throws Exception {
    Recording service = new Recording();
    Recording.Node node = new Recording.Node(service);
    CsiServer server = CsiServer.start(tmp.resolve("a.sock"), List.of(service, node));
    try (UnixChannel ch = new UnixChannel(server.socket())) {
      IdentityGrpc.newBlockingStub(ch.channel()).getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
      IdentityGrpc.newBlockingStub(ch.channel()).probe(ProbeRequest.getDefaultInstance());
      NodeGrpc.newBlockingStub(ch.channel()).nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
          .setVolumeId("v").setVolumePath("/p").build());
    } finally {
      server.shutdown(Duration.ofSeconds(1));
    }
    assertThat(service.threads.get("GetPluginInfo")).startsWith("epollEventLoopGroup");
    assertThat(service.threads.get("Probe")).startsWith("caravan-identity-");
    assertThat(service.threads.get("NodeGetVolumeStats")).startsWith("caravan-node-");

    // With a backend whose readiness and health never wait, Probe and stats run on the event loop too.
    service.threads.clear();
    server = CsiServer.start(tmp.resolve("b.sock"), List.of(service, node), List.of(), CsiServer.STORAGE_READS);
    try (UnixChannel ch = new UnixChannel(server.socket())) {
      IdentityGrpc.newBlockingStub(ch.channel()).probe(ProbeRequest.getDefaultInstance());
      NodeGrpc.newBlockingStub(ch.channel()).nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
          .setVolumeId("v").setVolumePath("/p").build());
    } finally {
      server.shutdown(Duration.ofSeconds(1));
    }
    assertThat(service.threads.get("Probe")).startsWith("epollEventLoopGroup");
    assertThat(service.threads.get("NodeGetVolumeStats")).startsWith("epollEventLoopGroup");
  }

  @Test
  void aHandlerThatThrowsAnErrorOnThePoolAnswersInternalAndThePoolServesTheNextCall() throws Exception {
    Recording service = new Recording();
    CsiServer server = CsiServer.start(tmp.resolve("e.sock"), List.of(service, new Recording.Node(service)));
    try (UnixChannel ch = new UnixChannel(server.socket())) {
      NodeGrpc.NodeBlockingStub node = NodeGrpc.newBlockingStub(ch.channel());
      StatusRuntimeException e = org.junit.jupiter.api.Assertions.assertThrows(StatusRuntimeException.class,
          () -> node.withDeadlineAfter(30, java.util.concurrent.TimeUnit.SECONDS).nodeStageVolume(
              NodeStageVolumeRequest.newBuilder().setVolumeId("v").build()));
      assertThat(e.getStatus().getCode()).as("not the client's deadline").isEqualTo(Status.Code.INTERNAL);
      assertThat(e.getStatus().getDescription()).as("the Error's message, not its class")
          .isEqualTo("internal error: a class went missing");
      node.withDeadlineAfter(30, java.util.concurrent.TimeUnit.SECONDS).nodeGetVolumeStats(
          NodeGetVolumeStatsRequest.newBuilder().setVolumeId("v").setVolumePath("/p").build());
    } finally {
      server.shutdown(Duration.ofSeconds(1));
    }
    assertThat(service.threads.get("NodeStageVolume")).startsWith("caravan-node-");
  }

  @Test
  void everyCallHasOneLineInOrderWrittenOffTheCallsThread() throws Exception {
    Recording service = new Recording();
    CsiServer server = CsiServer.start(tmp.resolve("c.sock"), List.of(service, new Recording.Node(service)));
    int calls = 50;
    try (UnixChannel ch = new UnixChannel(server.socket())) {
      NodeGrpc.NodeBlockingStub node = NodeGrpc.newBlockingStub(ch.channel());
      for (int i = 0; i < calls; i++) {
        node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId("vol-" + i).setVolumePath("/p").build());
      }
      StatusRuntimeException e = org.junit.jupiter.api.Assertions.assertThrows(StatusRuntimeException.class,
          () -> node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId("bad id\n\"x\"")
              .setVolumePath("/p").build()));
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
    } finally {
      server.shutdown(Duration.ofSeconds(1)); // writes what is still queued
    }
    List<LogRecord> records = lines.records();
    assertThat(records).hasSize(calls + 1);
    for (int i = 0; i < calls; i++) {
      assertThat(records.get(i).getMessage()).matches("rpc method=NodeGetVolumeStats volume=vol-" + i + " code=OK us=\\d+");
      assertThat(records.get(i).getSourceClassName()).isEqualTo(CallLogInterceptor.class.getName());
    }
    // the id as the client sent it, made single-line and unquoted when written
    assertThat(records.get(calls).getMessage())
        .matches("rpc method=NodeGetVolumeStats volume=bad\\?id\\?\\?x\\? code=NOT_FOUND us=\\d+ error=\"no such volume\"");
    assertThat(lines.threads()).containsOnly("caravan-rpc-log");
  }

  @Test
  void linesOfCallsAnsweredOnTheEventLoopAreWrittenInOrderWhileTheServerRuns() throws Exception {
    // Such a line wakes the writer from a task on the loop, after the response: it must still come
    // promptly, while the server runs, not only from the drain at shutdown.
    Recording service = new Recording();
    CsiServer server = CsiServer.start(tmp.resolve("d.sock"), List.of(service, new Recording.Node(service)),
        List.of(), CsiServer.STORAGE_READS);
    int calls = 30;
    List<LogRecord> records;
    try (UnixChannel ch = new UnixChannel(server.socket())) {
      NodeGrpc.NodeBlockingStub node = NodeGrpc.newBlockingStub(ch.channel());
      for (int i = 0; i < calls; i++) {
        node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId("loop-" + i).setVolumePath("/p").build());
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (lines.records().size() < calls && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      records = lines.records();
    } finally {
      server.shutdown(Duration.ofSeconds(1));
    }
    assertThat(service.threads.get("NodeGetVolumeStats")).startsWith("epollEventLoopGroup");
    assertThat(records).hasSize(calls);
    for (int i = 0; i < calls; i++) {
      assertThat(records.get(i).getMessage()).matches("rpc method=NodeGetVolumeStats volume=loop-" + i + " code=OK us=\\d+");
    }
    assertThat(lines.threads()).containsOnly("caravan-rpc-log");
  }

  @Test
  void aFullQueueMakesTheCallerWriteItsLineNoneIsLost() throws Exception {
    CountDownLatch stalled = new CountDownLatch(1);
    Handler stall = new Handler() {
      @Override
      public void publish(LogRecord r) {
        if (Thread.currentThread().getName().equals("caravan-rpc-log")) {
          try {
            stalled.await(30, TimeUnit.SECONDS); // stderr that does not drain
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    RpcLog.LINES.addHandler(stall);
    RpcLog.LINES.setUseParentHandlers(false); // thousands of lines: not onto the console
    RpcLog log = RpcLog.start();
    try {
      int total = RpcLog.CAPACITY + 10;
      for (int i = 0; i < total; i++) {
        log.add(new RpcLog.Line(System.currentTimeMillis(), "csi.v1.Node/NodeGetInfo", "v" + i, Status.Code.OK, i, null));
      }
      // The writer holds one line, the queue the next CAPACITY; the callers wrote the rest themselves.
      assertThat(lines.threads()).contains(Thread.currentThread().getName());
      stalled.countDown();
      log.close();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (lines.records().size() < total && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(lines.records()).hasSize(total);
    } finally {
      stalled.countDown();
      RpcLog.LINES.removeHandler(stall);
      RpcLog.LINES.setUseParentHandlers(true);
    }
  }

  @Test
  void aCallTheClientGaveUpOnFinishesBeforeTheEventLoopsStop() throws Exception {
    // The client cancels (a deadline, a disconnect) while the handler still runs on its pool thread: the
    // server has no open stream left and terminates at once, but the handler answers later. Its
    // answer goes through an event loop, which must still be there (a rejected write otherwise).
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch answered = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicReference<Thread> handlerThread = new java.util.concurrent.atomic.AtomicReference<>();
    IdentityGrpc.IdentityImplBase slow = new IdentityGrpc.IdentityImplBase() {
      @Override
      public void probe(ProbeRequest request, StreamObserver<ProbeResponse> out) {
        handlerThread.set(Thread.currentThread());
        entered.countDown();
        awaitIgnoringInterrupts(release);
        try {
          out.onNext(ProbeResponse.getDefaultInstance());
          out.onCompleted();
        } finally {
          answered.countDown();
        }
      }
    };
    Lines severe = new Lines();
    java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
    root.addHandler(severe);
    CsiServer server = CsiServer.start(tmp.resolve("g.sock"), List.of(slow));
    Thread stopping;
    try (UnixChannel ch = new UnixChannel(server.socket())) {
      var call = IdentityGrpc.newFutureStub(ch.channel()).probe(ProbeRequest.getDefaultInstance());
      assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
      call.cancel(true);
    } finally {
      stopping = Thread.ofPlatform().start(() -> server.shutdown(Duration.ofSeconds(10)));
    }
    try {
      stopping.join(1_500); // long enough for the loops to stop, if shutdown did not wait for the call
      release.countDown();
      assertThat(answered.await(5, TimeUnit.SECONDS)).isTrue();
      stopping.join(10_000);
      // The pool is shut down by now, so its thread ends with the call, after all the call logs.
      Thread handler = handlerThread.get();
      handler.join(10_000);
      assertThat(handler.isAlive()).as("the call's pool thread ended").isFalse();
      assertThat(stopping.isAlive()).as("shutdown returned").isFalse();
    } finally {
      release.countDown();
      root.removeHandler(severe);
    }
    assertThat(severe.records()).filteredOn(r -> r.getLevel().intValue() >= java.util.logging.Level.SEVERE.intValue())
        .extracting(LogRecord::getMessage).isEmpty();
  }

  private static void awaitIgnoringInterrupts(CountDownLatch latch) {
    boolean interrupted = false;
    while (true) {
      try {
        latch.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** Notes the thread each call ran on. */
  static final class Recording extends IdentityGrpc.IdentityImplBase {
    final Map<String, String> threads = new ConcurrentHashMap<>();

    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> out) {
      threads.put("GetPluginInfo", Thread.currentThread().getName());
      out.onNext(GetPluginInfoResponse.newBuilder().setName("t").build());
      out.onCompleted();
    }

    @Override
    public void probe(ProbeRequest request, StreamObserver<ProbeResponse> out) {
      threads.put("Probe", Thread.currentThread().getName());
      out.onNext(ProbeResponse.getDefaultInstance());
      out.onCompleted();
    }

    static final class Node extends NodeGrpc.NodeImplBase {
      private final Recording recording;

      Node(Recording recording) {
        this.recording = recording;
      }

      @Override
      public void nodeStageVolume(NodeStageVolumeRequest req, StreamObserver<NodeStageVolumeResponse> out) {
        recording.threads.put("NodeStageVolume", Thread.currentThread().getName());
        throw new LinkageError("a class went missing");
      }

      @Override
      public void nodeGetVolumeStats(NodeGetVolumeStatsRequest req, StreamObserver<NodeGetVolumeStatsResponse> out) {
        recording.threads.put("NodeGetVolumeStats", Thread.currentThread().getName());
        if (req.getVolumeId().startsWith("bad")) {
          out.onError(Status.NOT_FOUND.withDescription("no such volume").asRuntimeException());
          return;
        }
        out.onNext(NodeGetVolumeStatsResponse.getDefaultInstance());
        out.onCompleted();
      }
    }
  }

  /** The per-RPC lines, with the thread each was written on. */
  static final class Lines extends Handler {
    private final List<LogRecord> records = new ArrayList<>();
    private final Set<String> threads = ConcurrentHashMap.newKeySet();

    @Override
    public synchronized void publish(LogRecord r) {
      records.add(r);
      threads.add(Thread.currentThread().getName());
    }

    synchronized List<LogRecord> records() {
      return List.copyOf(records);
    }

    Set<String> threads() {
      return Set.copyOf(threads);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  }
}

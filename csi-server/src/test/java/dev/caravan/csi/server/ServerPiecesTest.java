package dev.caravan.csi.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.VolumeLocks;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.GetPluginInfoRequest;
import dev.caravan.csi.v1.GetPluginInfoResponse;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.storage.exec.UnreapedTool;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ServerPiecesTest {
  @TempDir Path tmp;

  @Test
  void endpointParsing() {
    assertThat(Endpoint.parse("unix:///csi/csi.sock")).isEqualTo(Path.of("/csi/csi.sock"));
    assertThat(Endpoint.parse("unix:/csi/csi.sock")).isEqualTo(Path.of("/csi/csi.sock"));
    assertThatThrownBy(() -> Endpoint.parse("tcp://127.0.0.1:1")).hasMessageContaining("unix socket");
    assertThatThrownBy(() -> Endpoint.parse("unix://relative.sock")).hasMessageContaining("absolute");
    assertThatThrownBy(() -> Endpoint.parse("")).hasMessageContaining("CSI_ENDPOINT");
  }

  @Test
  void locksAreNonBlockingPerKey() {
    VolumeLocks locks = new VolumeLocks();
    try (VolumeLocks.Held a = locks.acquire(VolumeLocks.volume("v1"))) {
      assertThatThrownBy(() -> locks.acquire(VolumeLocks.volume("v1")))
          .isInstanceOfSatisfying(CsiException.class, e -> assertThat(e.kind()).isEqualTo(CsiException.Kind.ABORTED))
          .hasMessage("an operation for volume v1 is already pending");
      // all-or-nothing: a contended second key releases the first
      assertThatThrownBy(() -> locks.acquire(VolumeLocks.volume("v2"), VolumeLocks.volume("v1")));
      assertThat(locks.isHeld(VolumeLocks.volume("v2"))).isFalse();
      locks.acquire(VolumeLocks.volume("v3")).close();
    }
    assertThat(locks.isHeld(VolumeLocks.volume("v1"))).isFalse();
  }

  /**
   * A tool killed after its timeout under a volume's lock that has not exited (a real process here,
   * named as the tool runner names one) keeps the volume busy, naming the process, until it is gone.
   */
  @Test
  void aVolumeStaysBusyWhileAToolKilledUnderItsLockStillRuns() throws Exception {
    java.util.Deque<UnreapedTool> ranOnThisThread = new java.util.ArrayDeque<>();
    VolumeLocks locks = new VolumeLocks(() -> {
      List<UnreapedTool> taken = List.copyOf(ranOnThisThread);
      ranOnThisThread.clear();
      return taken;
    });
    Process tool = new ProcessBuilder("sleep", "600").start();
    try {
      try (VolumeLocks.Held held = locks.acquire(VolumeLocks.volume("v1"), VolumeLocks.volume("v2"))) {
        ranOnThisThread.add(new UnreapedTool(tool.pid(), List.of("sleep", "600"), tool.onExit()));
      }
      assertThatThrownBy(() -> locks.acquire(VolumeLocks.volume("v1")))
          .isInstanceOfSatisfying(CsiException.class, e -> assertThat(e.kind()).isEqualTo(CsiException.Kind.ABORTED))
          .hasMessageContaining("volume v1")
          .hasMessageContaining("process " + tool.pid() + " (sleep 600)");
      assertThat(locks.isHeld(VolumeLocks.volume("v2"))).isTrue();
      locks.acquire(VolumeLocks.volume("v3")).close();
    } finally {
      tool.destroyForcibly();
    }
    tool.onExit().get(30, java.util.concurrent.TimeUnit.SECONDS);
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (locks.isHeld(VolumeLocks.volume("v1")) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    locks.acquire(VolumeLocks.volume("v1"), VolumeLocks.volume("v2")).close();
  }

  @Test
  void secretsAreRedacted() {
    CreateVolumeRequest req = CreateVolumeRequest.newBuilder().setName("n").putSecrets("password", "hunter2")
        .putParameters("fsType", "xfs").build();
    String logged = Redaction.redact(req).toString();
    assertThat(logged).doesNotContain("hunter2").contains("password").contains(Redaction.REDACTED).contains("xfs");
    assertThat(CallLogInterceptor.subjectOf(req)).isEqualTo("n");
  }

  @Test
  void staleSocketIsReplacedLiveOneAndOtherFilesRefused() throws Exception {
    Path sock = tmp.resolve("csi.sock");
    try (ServerSocketChannel ch = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.bind(UnixDomainSocketAddress.of(sock));
      assertThat(CsiServer.isLive(sock)).isTrue();
      assertThatThrownBy(() -> CsiServer.prepareSocketPath(sock)).hasMessageContaining("another process");
    }
    assertThat(Files.exists(sock)).isTrue(); // closed without unlinking: stale
    CsiServer server = CsiServer.start(sock, List.of(new Exploding()));
    try (UnixChannel ch = new UnixChannel(sock)) {
      StatusRuntimeException e = org.junit.jupiter.api.Assertions.assertThrows(StatusRuntimeException.class,
          () -> IdentityGrpc.newBlockingStub(ch.channel()).getPluginInfo(GetPluginInfoRequest.getDefaultInstance()));
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL);
      assertThat(e.getStatus().getDescription()).contains("boom").doesNotContain("\tat ");
    } finally {
      server.shutdown(Duration.ofSeconds(1));
    }
    assertThat(Files.exists(sock)).isFalse();
    Path regular = Files.writeString(tmp.resolve("not-a-socket"), "x");
    assertThatThrownBy(() -> CsiServer.prepareSocketPath(regular)).isInstanceOf(IOException.class)
        .hasMessageContaining("not a socket");
  }

  /** A service that fails unexpectedly: the client must see INTERNAL with a message, not a trace. */
  static final class Exploding extends IdentityGrpc.IdentityImplBase {
    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> out) {
      throw new IllegalStateException("boom");
    }
  }
}

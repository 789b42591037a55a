package dev.caravan.csi.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.GetPluginInfoRequest;
import dev.caravan.csi.v1.GetPluginInfoResponse;
import dev.caravan.csi.v1.IdentityGrpc;
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

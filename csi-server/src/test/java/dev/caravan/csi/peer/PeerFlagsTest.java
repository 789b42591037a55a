package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PeerFlagsTest {
  @Test
  void noPeerFlagMeansASingleNode() {
    assertThat(PeerFlags.parse("file", "n1", null, List.of(), null, null, null, null)).isEmpty();
  }

  @Test
  void peersNeedAListenAddressAndAllThreeTlsFiles(@TempDir Path dir) throws Exception {
    Path pem = Files.writeString(dir.resolve("x.pem"), "x");
    assertThatThrownBy(() -> PeerFlags.parse("file", "n1", null, List.of("n2=h:1"), pem, pem, pem, null))
        .hasMessageContaining("--peer-listen");
    assertThatThrownBy(() -> PeerFlags.parse("file", "n1", "127.0.0.1:9700", List.of(), pem, pem, null, null))
        .hasMessageContaining("mTLS only");
    assertThatThrownBy(() -> PeerFlags.parse("qnap", "n1", "127.0.0.1:9700", List.of(), pem, pem, pem, null))
        .hasMessageContaining("qnap");
    assertThatThrownBy(() -> PeerFlags.parse("file", "n1", "127.0.0.1:9700", List.of("n2"), pem, pem, pem, null))
        .hasMessageContaining("NODE=HOST:PORT");
    assertThatThrownBy(() -> PeerFlags.parse("file", "n1", "127.0.0.1:9700", List.of("n2=h:1", "n2=h:2"), pem, pem,
        pem, null)).hasMessageContaining("twice");
  }

  @Test
  void aCompleteSetListsTheOtherNodesAndTheReserve(@TempDir Path dir) throws Exception {
    Path pem = Files.writeString(dir.resolve("x.pem"), "x");
    PeerSettings s = PeerFlags.parse("local", "n1", "0.0.0.0:9700",
        List.of("n1=10.0.0.1:9700", "n2=10.0.0.2:9700", "n3=[fd00::3]:9701"), pem, pem, pem, "10GiB").orElseThrow();
    assertThat(s.listen()).isEqualTo(new PeerAddress("0.0.0.0", 9700));
    assertThat(s.peers().current()).isEqualTo(Map.of("n2", new PeerAddress("10.0.0.2", 9700),
        "n3", new PeerAddress("fd00::3", 9701)));
    assertThat(s.reserveBytes()).isEqualTo(10L << 30);
  }

  @Test
  void sizesArePowersOf1024() {
    assertThat(PeerFlags.bytes("f", "1048576")).isEqualTo(1L << 20);
    assertThat(PeerFlags.bytes("f", "512MiB")).isEqualTo(512L << 20);
    assertThat(PeerFlags.bytes("f", "2G")).isEqualTo(2L << 30);
    assertThatThrownBy(() -> PeerFlags.bytes("--placement-reserve", "lots")).hasMessageContaining("--placement-reserve");
  }
}

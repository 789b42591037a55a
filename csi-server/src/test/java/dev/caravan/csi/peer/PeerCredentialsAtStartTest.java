package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.Main;
import dev.caravan.csi.iscsi.IscsiGc;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import dev.caravan.storage.testing.LoopbackPorts;
import java.io.ByteArrayOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * A node's own peer certificate is checked before the plugin starts: one that cannot work (its
 * subjectAltName lacks the node id, the key is not its key, it does not chain to the CA, its extended
 * key usage forbids a role a node has) stops the start naming the rule and the file; one that
 * expires soon starts with a warning and its days left in a metric; doctor reports the same checks.
 */
class PeerCredentialsAtStartTest {
  @TempDir Path dir;
  private PeerCa ca;
  private Path tls;

  @BeforeEach
  void ca() throws Exception {
    ca = new PeerCa("start CA");
    tls = dir.resolve("tls");
  }

  private static Instant now() {
    return Instant.now();
  }

  private PeerCa.Leaf leaf(List<String> sans, Instant notAfter, KeyPurposeId... usages) throws Exception {
    return ca.issue("n1", sans, now().minus(1, ChronoUnit.HOURS), notAfter, usages);
  }

  private Plugin start() throws Exception {
    int port = LoopbackPorts.unused();
    PeerSettings peers = new PeerSettings(new PeerAddress("127.0.0.1", port), tls.resolve("cert.pem"),
        tls.resolve("key.pem"), tls.resolve("ca.pem"), new StaticPeers(Map.of()), 0, Duration.ofSeconds(5));
    Plugin.Settings s = Plugin.Settings.of("file", dir.resolve("csi.sock"), "n1", dir.resolve("data"))
        .withObserve(ObserveSettings.off().withMetrics(true));
    return Plugin.start(s, IscsiGc.DEFAULT, Optional.of(peers));
  }

  private void refusedNaming(String file, String... rule) {
    assertThatThrownBy(this::start).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(tls.resolve(file).toString()).hasMessageContainingAll(rule);
    assertThat(dir.resolve("csi.sock")).doesNotExist();
  }

  @Test
  void aCertificateWhoseSubjectAltNameLacksTheNodeIdStopsTheStart() throws Exception {
    PeerCa.write(tls, leaf(List.of("n1.example", "other"), now().plus(90, ChronoUnit.DAYS)), ca.cert);
    refusedNaming("cert.pem", "subjectAltName", "n1", "[n1.example, other]");
  }

  @Test
  void aKeyThatIsNotTheCertificatesStopsTheStart() throws Exception {
    PeerCa.write(tls, PeerCa.withForeignKey(leaf(List.of("n1"), now().plus(90, ChronoUnit.DAYS))), ca.cert);
    refusedNaming("key.pem", "not the private key of", "cert.pem");
  }

  @Test
  void aCertificateThatDoesNotChainToTheCaStopsTheStart() throws Exception {
    PeerCa.write(tls, leaf(List.of("n1"), now().plus(90, ChronoUnit.DAYS)), new PeerCa("another CA").cert);
    refusedNaming("cert.pem", "does not chain to", tls.resolve("ca.pem").toString());
  }

  @Test
  void anExtendedKeyUsageWithoutClientAuthStopsTheStart() throws Exception {
    PeerCa.write(tls, leaf(List.of("n1"), now().plus(90, ChronoUnit.DAYS), KeyPurposeId.id_kp_serverAuth), ca.cert);
    refusedNaming("cert.pem", "extended key usage", "clientAuth");
  }

  @Test
  void bothUsagesStartAndACertificateExpiringSoonWarnsWithItsDaysLeft() throws Exception {
    PeerCa.write(tls, leaf(List.of("n1"), now().plus(10, ChronoUnit.DAYS), KeyPurposeId.id_kp_serverAuth,
        KeyPurposeId.id_kp_clientAuth), ca.cert);
    try (CapturedLog log = new CapturedLog()) {
      Plugin p = start();
      try {
        assertThat(log.matching("WARNING", tls.resolve("cert.pem").toString(), "expires in 9 day")).hasSize(1);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ((PrometheusMetrics) p.observability().metrics()).write(out);
        String days = out.toString(StandardCharsets.UTF_8).lines()
            .filter(l -> l.startsWith("caravan_peer_certificate_days_left ")).findFirst().orElseThrow();
        assertThat(Double.parseDouble(days.substring(days.indexOf(' ') + 1))).isBetween(9.9, 10.0);
      } finally {
        p.shutdown(Duration.ofSeconds(2));
      }
    }
  }

  @Test
  void anExpiredOrNotYetValidCertificateStartsWithAnError() throws Exception {
    Instant now = now();
    for (PeerCa.Leaf l : List.of(ca.issue("n1", List.of("n1"), now.minus(2, ChronoUnit.DAYS), now.minus(1,
        ChronoUnit.DAYS)), ca.issue("n1", List.of("n1"), now.plus(1, ChronoUnit.DAYS), now.plus(9, ChronoUnit.DAYS)))) {
      PeerCa.write(tls, l, ca.cert);
      try (CapturedLog log = new CapturedLog()) {
        start().shutdown(Duration.ofSeconds(2));
        assertThat(log.matching("SEVERE", tls.resolve("cert.pem").toString(), "peers refuse this node"))
            .singleElement().asString().containsAnyOf("expired on", "not valid before");
      }
    }
  }

  @Test
  void doctorReportsEachRule() throws Exception {
    PeerCa.write(tls, PeerCa.withForeignKey(leaf(List.of("other"), now().plus(10, ChronoUnit.DAYS),
        KeyPurposeId.id_kp_clientAuth)), new PeerCa("another CA").cert);
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(new Main());
    cli.setOut(new PrintWriter(out, true));
    int exit = cli.execute("doctor", "--data-dir", dir.resolve("data").toString(), "--node-id", "n1",
        "--peer-tls-cert", tls.resolve("cert.pem").toString(), "--peer-tls-key", tls.resolve("key.pem").toString(),
        "--peer-tls-ca", tls.resolve("ca.pem").toString());
    String text = out.toString();
    assertThat(exit).isEqualTo(1);
    assertThat(text.lines().filter(l -> l.startsWith("FAIL peer certificate")).toList()).hasSize(4)
        .anyMatch(l -> l.contains("subjectAltName")).anyMatch(l -> l.contains("not the private key of"))
        .anyMatch(l -> l.contains("does not chain to")).anyMatch(l -> l.contains("serverAuth"));
    assertThat(text.lines().filter(l -> l.startsWith("WARN peer certificate")).toList()).singleElement()
        .asString().contains("expires in 9 day");
    assertThat(Files.exists(dir.resolve("data"))).isFalse();
  }
}

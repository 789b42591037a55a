package dev.caravan.csi.backend.qnap;

import static dev.caravan.csi.testing.TestCertificates.cert;
import static dev.caravan.csi.testing.TestCertificates.keyPair;
import static dev.caravan.csi.testing.TestCertificates.pem;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.support.Pem;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** TLS to the appliance: its CA from qnap.ca-file, the JVM's CAs by default, and the loud opt-out. */
class QnapTlsTest {
  @TempDir Path dir;

  @Test
  void theAppliancesCertificateMustChainToTheConfiguredCa() throws Exception {
    KeyPair caKey = keyPair();
    X509Certificate ca = cert("CN=qnap test ca", caKey, "CN=qnap test ca", caKey.getPrivate(), true);
    KeyPair nasKey = keyPair();
    X509Certificate nas = cert("CN=qnap test ca", nasKey, "CN=nas", caKey.getPrivate(), false);
    Path caPem = pem(dir.resolve("ca.pem"), ca);
    Path nasPem = pem(dir.resolve("nas.pem"), nas);
    Path nasKeyPem = Files.writeString(dir.resolve("nas.key"), "-----BEGIN PRIVATE KEY-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(nasKey.getPrivate().getEncoded())
        + "\n-----END PRIVATE KEY-----\n");
    try (QnapSimulator sim = new QnapSimulator(QnapSimulator.Flavour.QTS,
        Optional.of(Pem.context(Optional.of(nasPem), Optional.of(nasKeyPem), Optional.empty())))) {
      String url = sim.url().toString();
      assertThat(url).startsWith("https://");
      assertThat(api(Map.of("url", url, "ca-file", caPem.toString())).luns()).isEmpty();
      java.util.logging.Logger http = java.util.logging.Logger.getLogger(Http.class.getName());
      QnapControllerTest.Captured log = new QnapControllerTest.Captured();
      http.addHandler(log);
      try {
        assertThat(api(Map.of("url", url, "insecure-skip-tls-verify", "true")).luns()).isEmpty();
      } finally {
        http.removeHandler(log);
      }
      assertThat(log.lines).anySatisfy(l -> assertThat(l).startsWith("WARNING").contains("certificate checks")
          .contains("OFF"));
      QnapApi untrusted = api(Map.of("url", url));
      assertThatThrownBy(untrusted::luns).isInstanceOf(CsiException.class)
          .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(CsiException.Kind.UNAVAILABLE))
          .hasMessageContaining("did not answer")
          .hasMessageContaining("the TLS handshake failed (unable to find valid certification path to requested target)")
          .hasMessageNotContaining("Exception");
      assertThat(sim.logins()).as("no password went to an unverified appliance").isEqualTo(2);
    }
    assertThatThrownBy(() -> QnapConfig.parse(Map.of("url", "https://nas", "portals", "nas", "ca-file", caPem.toString(),
        "insecure-skip-tls-verify", "true"))).hasMessageContaining("contradict");
  }

  private static QnapApi api(Map<String, String> settings) {
    Map<String, String> options = new java.util.HashMap<>(settings);
    options.put("portals", "192.0.2.10");
    QnapConfig config = QnapConfig.parse(options);
    ApplianceLogin s = new ApplianceLogin(Http.open(config), new Credentials(QnapSimulator.USER, QnapSimulator.PASSWORD),
        Duration.ofMinutes(1), Clock.systemUTC());
    return new CgiApi(s, Duration.ofSeconds(5));
  }
}

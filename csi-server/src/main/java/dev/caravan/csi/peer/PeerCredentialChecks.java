package dev.caravan.csi.peer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Locale;

/**
 * The checks a node's own peer credentials must pass, run before {@code caravan serve} starts and
 * by {@code caravan doctor}: a certificate that breaks one of them works with no peer, and the
 * mistake would otherwise show only at the first peer call, on another node.
 *
 * <p>The start is refused when the subjectAltName lacks the node id, the key is not the
 * certificate's, the certificate does not chain to the CA file, or its extended key usage leaves out
 * serverAuth or clientAuth (each node is both server and client to its peers, and TLS stacks that
 * honour the extension refuse it). An expired or not yet valid certificate does not stop the start:
 * the node's own volumes are still served, and a renewed file takes effect without a restart; it is
 * an error in the log and a FAIL in doctor. One that expires within {@link #EXPIRY_WARNING} is a
 * warning.
 */
public final class PeerCredentialChecks {
  /** How long before its expiry a certificate is warned about: enough for a renewal by hand. */
  public static final Duration EXPIRY_WARNING = Duration.ofDays(30);

  private static final String SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
  private static final String CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
  private static final String ANY_USAGE = "2.5.29.37.0";

  public enum Severity { OK, WARN, FAIL }

  /**
   * One check's outcome.
   *
   * @param blocksStart whether a FAIL of this check stops {@code caravan serve}
   */
  public record Finding(Severity severity, String subject, String found, String fix, boolean blocksStart) {}

  private final List<Finding> findings = new ArrayList<>();

  private PeerCredentialChecks() {}

  /** Every check of the credential files for node {@code node}, at {@code now}. */
  public static List<Finding> check(Path cert, Path key, Path ca, String node, Instant now) {
    PeerCredentialChecks c = new PeerCredentialChecks();
    PemMaterial m;
    try {
      m = PemMaterial.read(cert, key, ca);
    } catch (IOException | RuntimeException e) {
      c.fail("peer certificate files", "cannot be read: " + e.getMessage(), "give --peer-tls-cert, --peer-tls-key and"
          + " --peer-tls-ca readable PEM files", true);
      return List.copyOf(c.findings);
    }
    if (m.chain().isEmpty() || m.authorities().isEmpty()) {
      c.fail("peer certificate files", (m.chain().isEmpty() ? cert : ca) + " holds no certificate",
          "put the PEM certificate(s) in it", true);
      return List.copyOf(c.findings);
    }
    X509Certificate leaf = m.chain().getFirst();
    c.names(leaf, cert, node);
    c.key(m.key(), leaf, key, cert);
    c.chain(m, leaf, cert, ca, now);
    c.usage(leaf, cert);
    c.validity(leaf, cert, now);
    return List.copyOf(c.findings);
  }

  /**
   * Runs the checks at start: IllegalArgumentException naming the rule and the file for the first
   * one that stops the start; the others are logged.
   */
  public static void requireUsable(PeerSettings s, String node) {
    List<Finding> all = check(s.cert(), s.key(), s.ca(), node, Instant.now());
    for (Finding f : all) {
      if (f.severity() == Severity.FAIL && f.blocksStart()) {
        throw new IllegalArgumentException(f.subject() + ": " + f.found() + "; " + f.fix());
      }
    }
    System.Logger log = System.getLogger(PeerCredentialChecks.class.getName());
    for (Finding f : all) {
      if (f.severity() == Severity.FAIL) {
        log.log(System.Logger.Level.ERROR, "{0}: {1}; peers refuse this node until {2}", f.subject(), f.found(),
            f.fix());
      } else if (f.severity() == Severity.WARN) {
        log.log(System.Logger.Level.WARNING, "{0}: {1}; {2}", f.subject(), f.found(), f.fix());
      }
    }
  }

  private void add(Severity severity, String subject, String found, String fix, boolean blocksStart) {
    findings.add(new Finding(severity, subject, found, severity == Severity.OK ? "" : fix, blocksStart));
  }

  private void fail(String subject, String found, String fix, boolean blocksStart) {
    add(Severity.FAIL, subject, found, fix, blocksStart);
  }

  private void names(X509Certificate leaf, Path cert, String node) {
    List<String> names = PeerTrustManager.nodeNames(leaf);
    boolean holds = names.stream().anyMatch(n -> n.equalsIgnoreCase(node));
    add(holds ? Severity.OK : Severity.FAIL, "peer certificate " + cert, holds
        ? "its subjectAltName holds the node id " + node : "its subjectAltName DNS names " + names
            + " do not hold this node's id " + node + ", which peers check",
        "issue it with subjectAltName DNS:" + node + " (the node id, --node-id)", true);
  }

  private void key(PrivateKey key, X509Certificate leaf, Path keyFile, Path cert) {
    String algorithm = switch (key.getAlgorithm().toUpperCase(Locale.ROOT)) {
      case "EC" -> "SHA256withECDSA";
      case "RSA" -> "SHA256withRSA";
      case "ED25519", "EDDSA" -> "Ed25519";
      case "ED448" -> "Ed448";
      default -> null;
    };
    if (algorithm == null) {
      add(Severity.WARN, "peer certificate key " + keyFile, "a " + key.getAlgorithm() + " key, which this check cannot"
          + " match against " + cert, "use an EC, RSA or Ed25519 key", false);
      return;
    }
    boolean matches;
    try {
      byte[] probe = "caravan peer key check".getBytes(StandardCharsets.US_ASCII);
      Signature sign = Signature.getInstance(algorithm);
      sign.initSign(key);
      sign.update(probe);
      byte[] signature = sign.sign();
      Signature verify = Signature.getInstance(algorithm);
      verify.initVerify(leaf.getPublicKey());
      verify.update(probe);
      matches = verify.verify(signature);
    } catch (GeneralSecurityException | RuntimeException e) {
      matches = false;
    }
    add(matches ? Severity.OK : Severity.FAIL, "peer certificate key " + keyFile, matches
        ? "the private key of " + cert : "not the private key of " + cert, "give the key the certificate was"
            + " issued for (both files come from the same issue)", true);
  }

  private void chain(PemMaterial m, X509Certificate leaf, Path cert, Path ca, Instant now) {
    // Validated at a moment inside the leaf's validity: an expired leaf is the validity check's finding.
    Instant at = now;
    if (at.isAfter(leaf.getNotAfter().toInstant())) {
      at = leaf.getNotAfter().toInstant();
    } else if (at.isBefore(leaf.getNotBefore().toInstant())) {
      at = leaf.getNotBefore().toInstant();
    }
    try {
      PeerTrustManager.validate(m.chain(), m.authorities(), Date.from(at));
      add(Severity.OK, "peer certificate " + cert, "chains to a CA in " + ca, "", true);
    } catch (GeneralSecurityException e) {
      fail("peer certificate " + cert, "does not chain to a CA in " + ca + " (" + e.getMessage() + "), so peers"
          + " refuse it", "issue it from the CA in " + ca + ", or put its CA there", true);
    }
  }

  private void usage(X509Certificate leaf, Path cert) {
    List<String> usages;
    try {
      usages = leaf.getExtendedKeyUsage();
    } catch (CertificateParsingException e) {
      fail("peer certificate " + cert, "its extended key usage cannot be read: " + e.getMessage(),
          "issue it again", true);
      return;
    }
    if (usages == null || usages.contains(ANY_USAGE)
        || (usages.contains(SERVER_AUTH) && usages.contains(CLIENT_AUTH))) {
      add(Severity.OK, "peer certificate " + cert, usages == null ? "no extended key usage (any use)"
          : "extended key usage allows serverAuth and clientAuth", "", true);
      return;
    }
    List<String> missing = new ArrayList<>();
    if (!usages.contains(SERVER_AUTH)) {
      missing.add("serverAuth");
    }
    if (!usages.contains(CLIENT_AUTH)) {
      missing.add("clientAuth");
    }
    fail("peer certificate " + cert, "its extended key usage leaves out " + String.join(" and ", missing)
        + ": a node is both server and client to its peers", "issue it with extendedKeyUsage = serverAuth, clientAuth",
        true);
  }

  private void validity(X509Certificate leaf, Path cert, Instant now) {
    Instant notBefore = leaf.getNotBefore().toInstant();
    Instant notAfter = leaf.getNotAfter().toInstant();
    String renew = "renew it (the file is re-read when it changes, no restart)";
    if (now.isBefore(notBefore)) {
      fail("peer certificate " + cert, "not valid before " + notBefore + " (is this node's clock right?)", renew, false);
    } else if (!now.isBefore(notAfter)) {
      fail("peer certificate " + cert, "expired on " + notAfter, renew, false);
    } else {
      Duration left = Duration.between(now, notAfter);
      boolean soon = left.compareTo(EXPIRY_WARNING) < 0;
      add(soon ? Severity.WARN : Severity.OK, "peer certificate " + cert, (soon ? "expires in " : "valid for ")
          + left.toDays() + " day(s), until " + notAfter, renew, false);
    }
  }
}

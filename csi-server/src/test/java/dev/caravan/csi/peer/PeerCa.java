package dev.caravan.csi.peer;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import java.util.Date;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/** A throwaway CA that issues peer certificates naming a node in their DNS subjectAltName. */
final class PeerCa {
  private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());

  /** A leaf certificate and its key. */
  record Leaf(X509Certificate cert, PrivateKey key) {}

  final KeyPair keys;
  final X509Certificate cert;

  PeerCa(String name) throws Exception {
    keys = keyPair();
    Instant now = Instant.now();
    JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(new X500Name("CN=" + name),
        BigInteger.valueOf(SERIAL.incrementAndGet()), Date.from(now.minus(1, ChronoUnit.HOURS)),
        Date.from(now.plus(1, ChronoUnit.DAYS)), new X500Name("CN=" + name), keys.getPublic());
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.digitalSignature));
    cert = sign(b, keys.getPrivate());
  }

  /** A certificate for {@code node}, valid from an hour ago for a day. */
  Leaf issue(String node) throws Exception {
    Instant now = Instant.now();
    return issue(node, now.minus(1, ChronoUnit.HOURS), now.plus(1, ChronoUnit.DAYS));
  }

  Leaf issue(String node, Instant notBefore, Instant notAfter) throws Exception {
    return issue(node, List.of(node), notBefore, notAfter);
  }

  /**
   * A certificate with subject CN {@code node}, the DNS names {@code sans} in its subjectAltName and,
   * when {@code usages} are given, an extended key usage extension holding just those.
   */
  Leaf issue(String node, List<String> sans, Instant notBefore, Instant notAfter, KeyPurposeId... usages)
      throws Exception {
    KeyPair k = keyPair();
    JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(new X500Name(cert.getSubjectX500Principal()
        .getName()), BigInteger.valueOf(SERIAL.incrementAndGet()), Date.from(notBefore), Date.from(notAfter),
        new X500Name("CN=" + node), k.getPublic());
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
    if (!sans.isEmpty()) {
      b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(
          sans.stream().map(n -> new GeneralName(GeneralName.dNSName, n)).toArray(GeneralName[]::new)));
    }
    if (usages.length > 0) {
      b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(usages));
    }
    return new Leaf(sign(b, keys.getPrivate()), k.getPrivate());
  }

  /** {@code leaf}'s certificate with another key pair's private key: a key that does not match. */
  static Leaf withForeignKey(Leaf leaf) throws Exception {
    return new Leaf(leaf.cert(), keyPair().getPrivate());
  }

  /** Replaces only ca.pem in {@code dir}, atomically. */
  static void writeCa(Path dir, X509Certificate... cas) throws Exception {
    StringBuilder caText = new StringBuilder();
    for (X509Certificate ca : cas) {
      caText.append(pem("CERTIFICATE", ca.getEncoded()));
    }
    replace(dir.resolve("ca.pem"), caText.toString());
  }

  /** Replaces only cert.pem and key.pem in {@code dir}, atomically each. */
  static void writeLeaf(Path dir, Leaf leaf) throws Exception {
    replace(dir.resolve("cert.pem"), pem("CERTIFICATE", leaf.cert().getEncoded()));
    replace(dir.resolve("key.pem"), pem("PRIVATE KEY", leaf.key().getEncoded()));
  }

  /** Writes cert.pem, key.pem and ca.pem (the given CAs) into {@code dir}, replacing files atomically. */
  static void write(Path dir, Leaf leaf, X509Certificate... cas) throws Exception {
    Files.createDirectories(dir);
    writeLeaf(dir, leaf);
    writeCa(dir, cas);
  }

  static CredentialFiles open(Path dir) throws Exception {
    return CredentialFiles.open(dir.resolve("cert.pem"), dir.resolve("key.pem"), dir.resolve("ca.pem"));
  }

  private static void replace(Path file, String text) throws Exception {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    Files.writeString(tmp, text);
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
        + "\n-----END " + type + "-----\n";
  }

  private static KeyPair keyPair() throws Exception {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(256);
    return g.generateKeyPair();
  }

  private static X509Certificate sign(JcaX509v3CertificateBuilder b, PrivateKey signer) throws Exception {
    return new JcaX509CertificateConverter().getCertificate(
        b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(signer)));
  }
}

package dev.caravan.csi.testing;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import java.util.Date;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/** A throwaway CA and the certificates it signs, for tests of TLS and mTLS on loopback. */
public final class TestCertificates {
  private TestCertificates() {}

  /** A fresh EC P-256 key pair. */
  public static KeyPair keyPair() throws Exception {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(256);
    return g.generateKeyPair();
  }

  /** A certificate for {@code subject}, valid for a day; a leaf names 127.0.0.1 and localhost. */
  public static X509Certificate cert(String issuer, KeyPair subjectKey, String subject, PrivateKey signer, boolean ca)
      throws Exception {
    Instant now = Instant.now();
    JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(new X500Name(issuer),
        BigInteger.valueOf(now.toEpochMilli() + subject.hashCode()), Date.from(now.minus(1, ChronoUnit.HOURS)),
        Date.from(now.plus(1, ChronoUnit.DAYS)), new X500Name(subject), subjectKey.getPublic());
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(ca));
    if (!ca) {
      b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
        new GeneralName(GeneralName.iPAddress, "127.0.0.1"), new GeneralName(GeneralName.dNSName, "localhost")}));
    }
    return new JcaX509CertificateConverter().getCertificate(
        b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(signer)));
  }

  /** Writes {@code cert} as PEM to {@code file}. */
  public static Path pem(Path file, X509Certificate cert) throws Exception {
    return Files.writeString(file, "-----BEGIN CERTIFICATE-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(cert.getEncoded())
        + "\n-----END CERTIFICATE-----\n");
  }

  /** Writes {@code key} as unencrypted PKCS#8 PEM to {@code file}. */
  public static Path key(Path file, PrivateKey key) throws IOException {
    return Files.writeString(file, "-----BEGIN PRIVATE KEY-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(key.getEncoded())
        + "\n-----END PRIVATE KEY-----\n");
  }
}

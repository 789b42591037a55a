package dev.caravan.csi.observe.http;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * PEM files to an {@link SSLContext}: certificate chains ({@code CERTIFICATE} blocks) and unencrypted
 * PKCS#8 private keys ({@code PRIVATE KEY}; RSA, EC or Ed25519). Older key formats are refused with
 * the command that converts them.
 */
public final class Pem {
  private Pem() {}

  public static List<Certificate> certificates(Path file) throws IOException, GeneralSecurityException {
    try (InputStream in = Files.newInputStream(file)) {
      Collection<? extends Certificate> certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
      if (certs.isEmpty()) {
        throw new GeneralSecurityException(file + " holds no PEM certificate");
      }
      return List.copyOf(certs);
    }
  }

  public static PrivateKey privateKey(Path file) throws IOException, GeneralSecurityException {
    String text = Files.readString(file, StandardCharsets.US_ASCII);
    if (text.contains("-----BEGIN RSA PRIVATE KEY-----") || text.contains("-----BEGIN EC PRIVATE KEY-----")
        || text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")) {
      throw new GeneralSecurityException(file + " is not an unencrypted PKCS#8 key; convert it with:"
          + " openssl pkcs8 -topk8 -nocrypt -in " + file + " -out key.pk8.pem");
    }
    String begin = "-----BEGIN PRIVATE KEY-----";
    int b = text.indexOf(begin);
    int e = text.indexOf("-----END PRIVATE KEY-----");
    if (b < 0 || e < b) {
      throw new GeneralSecurityException(file + " holds no PEM PRIVATE KEY block");
    }
    byte[] der = Base64.getMimeDecoder().decode(text.substring(b + begin.length(), e));
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
    for (String algorithm : new String[] {"RSA", "EC", "Ed25519"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(spec);
      } catch (GeneralSecurityException wrongAlgorithm) {
        // try the next
      }
    }
    throw new GeneralSecurityException(file + " holds a private key of an unsupported algorithm");
  }

  /**
   * A TLS context presenting {@code certFile}/{@code keyFile}, trusting {@code caFile} (for the peer's
   * certificate) when given. Used for the server (with client certificates required) and the CLI.
   */
  public static SSLContext context(Optional<Path> certFile, Optional<Path> keyFile, Optional<Path> caFile)
      throws IOException, GeneralSecurityException {
    KeyManagerFactory kmf = null;
    if (certFile.isPresent() && keyFile.isPresent()) {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(null, null);
      char[] pass = new char[0];
      ks.setKeyEntry("key", privateKey(keyFile.get()), pass,
          certificates(certFile.get()).toArray(new Certificate[0]));
      kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, pass);
    }
    TrustManagerFactory tmf = null;
    if (caFile.isPresent()) {
      KeyStore ts = KeyStore.getInstance("PKCS12");
      ts.load(null, null);
      int i = 0;
      for (Certificate c : certificates(caFile.get())) {
        ts.setCertificateEntry("ca" + i++, c);
      }
      tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(ts);
    }
    SSLContext ctx = SSLContext.getInstance("TLSv1.3");
    ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf == null ? null : tmf.getTrustManagers(), null);
    return ctx;
  }
}

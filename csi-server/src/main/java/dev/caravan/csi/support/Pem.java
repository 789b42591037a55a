package dev.caravan.csi.support;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.openssl.PEMEncryptedKeyPair;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.pkcs.PKCS8EncryptedPrivateKeyInfo;

/**
 * PEM files to an {@link SSLContext}: certificate chains ({@code CERTIFICATE} blocks, through the
 * JDK's X.509 factory) and unencrypted private keys (PKCS#8 or OpenSSL's RSA/EC forms, through
 * BouncyCastle's PEM parser).
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

  /**
   * The one private key in {@code file}: PKCS#8 ({@code PRIVATE KEY}) or the traditional OpenSSL
   * forms ({@code RSA PRIVATE KEY}, {@code EC PRIVATE KEY}), read by BouncyCastle's PEM parser.
   * Encrypted keys are refused: the plugin would need their passphrase on a command line or in a file
   * beside them, which protects nothing.
   */
  public static PrivateKey privateKey(Path file) throws IOException, GeneralSecurityException {
    Object object;
    try (PEMParser parser = new PEMParser(Files.newBufferedReader(file, StandardCharsets.US_ASCII))) {
      object = parser.readObject();
      while (object != null && !(object instanceof PrivateKeyInfo || object instanceof PEMKeyPair
          || object instanceof PKCS8EncryptedPrivateKeyInfo || object instanceof PEMEncryptedKeyPair)) {
        object = parser.readObject();
      }
    } catch (IOException | RuntimeException e) {
      throw new GeneralSecurityException(file + " is not a readable PEM file: " + e.getMessage(), e);
    }
    JcaPEMKeyConverter converter = new JcaPEMKeyConverter();
    return switch (object) {
      case PrivateKeyInfo info -> converter.getPrivateKey(info);
      case PEMKeyPair pair -> converter.getPrivateKey(pair.getPrivateKeyInfo());
      case PKCS8EncryptedPrivateKeyInfo ignored -> throw encrypted(file);
      case PEMEncryptedKeyPair ignored -> throw encrypted(file);
      case null -> throw new GeneralSecurityException(file + " holds no PEM private key block");
      default -> throw new GeneralSecurityException(file + " holds no PEM private key block");
    };
  }

  private static GeneralSecurityException encrypted(Path file) {
    return new GeneralSecurityException(file + " holds an encrypted private key; decrypt it into a file readable"
        + " by root only with: openssl pkcs8 -topk8 -nocrypt -in " + file + " -out key.pem");
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

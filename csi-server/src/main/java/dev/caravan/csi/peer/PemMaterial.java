package dev.caravan.csi.peer;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * One node's peer credentials as read from PEM files: its private key (unencrypted PKCS#8, EC, RSA or
 * Ed25519), its certificate chain (leaf first) and the CA certificates a peer's chain must end at.
 */
record PemMaterial(PrivateKey key, List<X509Certificate> chain, List<X509Certificate> authorities) {
  private static final String BEGIN_KEY = "-----BEGIN PRIVATE KEY-----";
  private static final String END_KEY = "-----END PRIVATE KEY-----";

  PemMaterial {
    chain = List.copyOf(chain);
    authorities = List.copyOf(authorities);
  }

  /** Reads the three files; IOException naming the file and what is wrong with it. */
  static PemMaterial read(Path certFile, Path keyFile, Path caFile) throws IOException {
    return new PemMaterial(privateKey(keyFile), certificates(certFile), certificates(caFile));
  }

  private static List<X509Certificate> certificates(Path file) throws IOException {
    List<X509Certificate> out = new ArrayList<>();
    try (InputStream in = Files.newInputStream(file)) {
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        out.add((X509Certificate) c);
      }
    } catch (GeneralSecurityException e) {
      throw new IOException(file + " is not a PEM certificate file: " + e.getMessage(), e);
    }
    if (out.isEmpty()) {
      throw new IOException(file + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
    }
    return out;
  }

  private static PrivateKey privateKey(Path file) throws IOException {
    String text = Files.readString(file, StandardCharsets.US_ASCII);
    int b = text.indexOf(BEGIN_KEY);
    int e = text.indexOf(END_KEY);
    if (b < 0 || e < b) {
      throw new IOException(file + " holds no unencrypted PKCS#8 private key (" + BEGIN_KEY + "); convert one with:"
          + " openssl pkcs8 -topk8 -nocrypt -in KEY -out " + file);
    }
    byte[] der;
    try {
      der = Base64.getMimeDecoder().decode(text.substring(b + BEGIN_KEY.length(), e));
    } catch (IllegalArgumentException bad) {
      throw new IOException(file + " has a private key block that is not base64", bad);
    }
    for (String algorithm : List.of("EC", "RSA", "Ed25519")) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
      } catch (GeneralSecurityException notThisOne) {
        // next algorithm
      }
    }
    throw new IOException(file + " holds a PKCS#8 key that is not EC, RSA or Ed25519");
  }
}

package dev.caravan.csi.peer;

import dev.caravan.csi.support.Pem;
import java.io.IOException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;

/**
 * One node's peer credentials as read from PEM files (through {@link Pem}, which every TLS file of
 * the plugin goes through): its unencrypted private key, its certificate chain (leaf first) and the CA
 * certificates a peer's chain must end at.
 */
record PemMaterial(PrivateKey key, List<X509Certificate> chain, List<X509Certificate> authorities) {
  PemMaterial {
    chain = List.copyOf(chain);
    authorities = List.copyOf(authorities);
  }

  /** Reads the three files; IOException naming the file and what is wrong with it. */
  static PemMaterial read(Path certFile, Path keyFile, Path caFile) throws IOException {
    return new PemMaterial(privateKey(keyFile), certificates(certFile), certificates(caFile));
  }

  private static List<X509Certificate> certificates(Path file) throws IOException {
    try {
      return Pem.certificates(file).stream().map(X509Certificate.class::cast).toList();
    } catch (GeneralSecurityException e) {
      throw new IOException(file + " is not a PEM certificate file: " + e.getMessage(), e);
    }
  }

  private static PrivateKey privateKey(Path file) throws IOException {
    try {
      return Pem.privateKey(file);
    } catch (GeneralSecurityException e) {
      throw new IOException(e.getMessage(), e);
    }
  }
}

package dev.caravan.csi.peer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.Objects;

/**
 * The peer certificate, key and CA files, re-read when any of them changes on disk (Nomad's
 * {@code template} blocks and Vault agents replace them in place when they renew), so renewals need no
 * restart. Checked on every TLS handshake: a stat of three files. A change that cannot be read (a
 * file caught half-written, a key that does not match) keeps the previous material and is retried
 * at the next handshake.
 */
public final class CredentialFiles {
  private static final System.Logger LOG = System.getLogger(CredentialFiles.class.getName());

  private final Path cert;
  private final Path key;
  private final Path ca;
  private List<Object> stamp;
  private PemMaterial material;

  private CredentialFiles(Path cert, Path key, Path ca) {
    this.cert = cert;
    this.key = key;
    this.ca = ca;
  }

  /** Reads the files once now: a missing or unreadable file fails the start, naming it. */
  public static CredentialFiles open(Path cert, Path key, Path ca) throws IOException {
    CredentialFiles f = new CredentialFiles(cert, key, ca);
    f.stamp = f.stamp();
    f.material = PemMaterial.read(cert, key, ca);
    return f;
  }

  /** The current material, re-read first if a file changed since the last read. */
  synchronized PemMaterial current() {
    try {
      List<Object> now = stamp();
      if (!now.equals(stamp)) {
        PemMaterial fresh = PemMaterial.read(cert, key, ca);
        material = fresh;
        stamp = now;
        LOG.log(System.Logger.Level.INFO, "peer credentials reloaded from {0}, {1}, {2}", cert, key, ca);
      }
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "peer credentials changed but cannot be read ({0}); still using the"
          + " previous ones", e.getMessage());
    }
    return material;
  }

  private List<Object> stamp() throws IOException {
    return List.of(stampOf(cert), stampOf(key), stampOf(ca));
  }

  private static Object stampOf(Path p) throws IOException {
    BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
    return List.of(a.lastModifiedTime(), a.size(), Objects.toString(a.fileKey()));
  }
}

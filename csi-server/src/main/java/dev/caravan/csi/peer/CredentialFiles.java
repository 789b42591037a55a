package dev.caravan.csi.peer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The peer certificate, key and CA files, re-read when any of them changes on disk (Nomad's
 * {@code template} blocks and Vault agents replace them in place when they renew), so renewals need no
 * restart. Checked on every TLS handshake: a stat of three files. A change that cannot be read (a
 * file caught half-written, a key that does not match) keeps the previous material and is retried
 * at the next handshake. Whoever holds connections made under the previous material is told of each
 * change ({@link #onChange}), so that a certificate or CA taken away cuts off the connections it let in.
 */
public final class CredentialFiles {
  private static final System.Logger LOG = System.getLogger(CredentialFiles.class.getName());

  private final Path cert;
  private final Path key;
  private final Path ca;
  private List<Object> stamp;
  private PemMaterial material;
  private final List<Runnable> listeners = new CopyOnWriteArrayList<>();

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

  /** Runs {@code listener} after each reload, on the thread that noticed the change. */
  void onChange(Runnable listener) {
    listeners.add(listener);
  }

  /** The current material, re-read first if a file changed since the last read. */
  PemMaterial current() {
    PemMaterial now;
    boolean changed = false;
    synchronized (this) {
      try {
        List<Object> seen = stamp();
        if (!seen.equals(stamp)) {
          material = PemMaterial.read(cert, key, ca);
          stamp = seen;
          changed = true;
          LOG.log(System.Logger.Level.INFO, "peer credentials reloaded from {0}, {1}, {2}", cert, key, ca);
        }
      } catch (IOException | RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "peer credentials changed but cannot be read ({0}); still using the"
            + " previous ones", e.getMessage());
      }
      now = material;
    }
    if (changed) {
      // Outside the lock: a listener closes connections, whose threads may be reading the material.
      listeners.forEach(Runnable::run);
    }
    return now;
  }

  private List<Object> stamp() throws IOException {
    return List.of(stampOf(cert), stampOf(key), stampOf(ca));
  }

  private static Object stampOf(Path p) throws IOException {
    BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
    return List.of(a.lastModifiedTime(), a.size(), Objects.toString(a.fileKey()));
  }
}

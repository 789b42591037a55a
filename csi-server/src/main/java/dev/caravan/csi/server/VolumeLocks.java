package dev.caravan.csi.server;

import dev.caravan.csi.backend.CsiException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Non-blocking per-key locks. The spec wants a second concurrent operation on the same volume to fail
 * fast with ABORTED rather than queue, and operations on different volumes never to wait for each
 * other. Keys are the backend's lock keys ({@code ControllerBackend#volumeLockKey}), which a name and
 * the id derived from it share, prefixed with the kind of object; they are human-readable ("volume
 * vol-db-3f2a9c0b1d4e") because they appear in the error.
 */
public final class VolumeLocks {
  private final Set<String> held = ConcurrentHashMap.newKeySet();

  /**
   * Takes every key or none. Throws ABORTED naming the first contended key.
   *
   * @return a handle that releases the keys when closed
   */
  public Held acquire(String... keys) {
    List<String> taken = new ArrayList<>(keys.length);
    for (String key : keys) {
      if (taken.contains(key)) {
        continue;
      }
      if (!held.add(key)) {
        taken.forEach(held::remove);
        throw new CsiException(
            CsiException.Kind.ABORTED, "an operation for " + key + " is already pending");
      }
      taken.add(key);
    }
    return new Held(List.copyOf(taken));
  }

  /** Whether a key is currently held (for tests and diagnostics). */
  public boolean isHeld(String key) {
    return held.contains(key);
  }

  /** The keys of one successful {@link #acquire}. */
  public final class Held implements AutoCloseable {
    private final List<String> keys;

    private Held(List<String> keys) {
      this.keys = keys;
    }

    @Override
    public void close() {
      keys.forEach(held::remove);
    }
  }

  /** The key of a volume, from the backend's lock key for it. */
  public static String volume(String lockKey) {
    return "volume " + lockKey;
  }

  /** The key of a snapshot, from the backend's lock key for it. */
  public static String snapshot(String lockKey) {
    return "snapshot " + lockKey;
  }
}

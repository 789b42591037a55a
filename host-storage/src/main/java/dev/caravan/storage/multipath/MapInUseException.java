package dev.caravan.storage.multipath;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.Wwid;
import java.util.List;

/** A multipath map was not flushed because something still uses it (see {@link dev.caravan.storage.block.DeviceUse}). */
public final class MapInUseException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final transient Wwid wwid;
  private final List<String> users;

  MapInUseException(Wwid wwid, String name, List<String> users) {
    super("multipath map " + name + " (WWID " + wwid + ") is in use, not flushed: " + String.join(", ", users));
    this.wwid = wwid;
    this.users = List.copyOf(users);
  }

  public Wwid wwid() {
    return wwid;
  }

  /** What uses it: {@code mounted at /path}, {@code bound at /path}, {@code held by dm-5}. */
  public List<String> users() {
    return users;
  }
}

package dev.caravan.csi.backend.file;

import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.support.PropertiesCodec;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.file.AtomicFiles;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * The file backend's freezes of volume filesystems. A plugin that dies while a filesystem is frozen
 * leaves it frozen, and every write to it waits until something thaws it; so each freeze is recorded
 * durably ({@code <data>/freezing/<volume id>}, naming the process that froze it) before FIFREEZE
 * and the record removed after the thaw. When the backend opens, {@link #thawLeftovers} thaws the
 * volumes that records of dead processes name.
 */
final class Freezes {
  private final FileStore store;
  private final Path dir;

  Freezes(FileStore store) {
    this.store = store;
    this.dir = store.freezing();
  }

  /** Runs {@code action} with the filesystem of volume {@code volumeId}, mounted at {@code mountPoint}, frozen. */
  <T> T whileFrozen(String volumeId, Path mountPoint, Supplier<T> action) {
    Path record = dir.resolve(volumeId);
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + dir, e);
    }
    AtomicFiles.write(record, encode(mountPoint));
    try {
      return Filesystems.whileFrozen(mountPoint, () -> {
        CrashPoints.reach("copy.while-frozen");
        return action.get();
      });
    } finally {
      FileStore.delete(record);
      FileStore.syncDir(dir);
    }
  }

  /**
   * Thaws the filesystem of the volume each record names, where the process that froze it is gone,
   * through any mount of the device its image is attached as (the one frozen may have been a bind
   * since unmounted), and drops the record.
   *
   * @return what was done, one line per record, for the log
   */
  List<String> thawLeftovers() {
    List<String> done = new ArrayList<>();
    for (Path record : records()) {
      String volumeId = record.getFileName().toString();
      Properties p = decode(record);
      String pid = p.getProperty("pid", "unknown");
      if (alive(p)) {
        continue; // its freeze is still in progress
      }
      String what = "volume " + volumeId + ", frozen at " + p.getProperty("mountPoint") + " by process " + pid
          + ", which ended before thawing it";
      Path image = store.volumeImage(volumeId);
      Optional<Path> mount = (Files.exists(image) ? LoopDevices.find(image) : Optional.<LoopDevice>empty())
          .flatMap(loop -> MountTable.read().stream()
              .filter(m -> m.source().equals(loop.device().toString())).map(MountEntry::mountPoint).findFirst());
      if (mount.isPresent()) {
        done.add((Filesystems.thaw(mount.get()) ? "thawed " : "found not frozen: ") + what);
      } else {
        done.add("nothing to thaw (no longer mounted): " + what);
      }
      FileStore.delete(record);
      FileStore.syncDir(dir);
    }
    return done;
  }

  /** Whether the process a record names still runs; a record that names none cannot be of a live one. */
  private static boolean alive(Properties record) {
    Optional<Instant> started;
    long pid;
    try {
      pid = Long.parseLong(record.getProperty("pid", ""));
      started = Optional.ofNullable(record.getProperty("started")).map(Instant::parse);
    } catch (RuntimeException e) {
      return false;
    }
    return started.isPresent() && ProcessHandle.of(pid).filter(ProcessHandle::isAlive)
        .filter(h -> h.info().startInstant().equals(started))
        .isPresent();
  }

  private List<Path> records() {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(f -> !f.getFileName().toString().startsWith(".")).sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + dir, e);
    }
  }

  private static byte[] encode(Path mountPoint) {
    Properties p = new Properties();
    p.setProperty("mountPoint", mountPoint.toString());
    ProcessHandle self = ProcessHandle.current();
    p.setProperty("pid", Long.toString(self.pid()));
    self.info().startInstant().ifPresent(t -> p.setProperty("started", t.toString()));
    return PropertiesCodec.encode(p, null);
  }

  private static Properties decode(Path record) {
    try {
      return PropertiesCodec.decode(Files.readAllBytes(record));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read freeze record " + record, e);
    }
  }
}

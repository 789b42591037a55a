package dev.caravan.csi.node;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

/**
 * Where the node journal lives, and why there.
 *
 * <p>The journal describes mounts and devices, which a reboot takes down, and it must outlive a
 * plugin restart, which they do. A tmpfs has exactly that lifetime, and writing a record there is a
 * page-cache operation with no filesystem journal behind it; so the journal lives under {@code
 * /run/caravan} when that is on a tmpfs, in a directory named after the data directory (two plugins
 * with two data directories never share one). Otherwise it lives in the data directory, as it always
 * has.
 *
 * <p>In a container a tmpfs at {@code /run} belongs to the container and goes with it, while the
 * mounts the plugin made stay on the host: there the tmpfs is used only when {@code /run/caravan}
 * is itself a mount, which is how an operator hands the host's directory in. Records found in the
 * place not chosen (an upgrade from a plugin that kept them in the data directory, or a host whose
 * {@code /run} changed) are moved into the chosen one at start, before anything reads them, keeping
 * their modification times: a record written before this boot stays recognisably stale.
 *
 * @param dir the journal's directory
 * @param other the other place the journal could have been, whose records {@link #migrate} moves in
 * @param why the reason for the choice, for the log and {@code caravan doctor}
 */
public record JournalPlace(Path dir, Path other, String why) {
  /** The host's runtime directory for Caravan. */
  public static final Path RUN = Path.of("/run/caravan");

  private static final String MIGRATING = ".migrating";

  /** Where a plugin with {@code dataDir} keeps its journal on this host. */
  public static JournalPlace of(Path dataDir) {
    return of(dataDir, RUN, inContainer());
  }

  /** {@link #given} when {@code journalDir} (the flag) is set, else {@link #of(Path)}. */
  public static JournalPlace choose(Path journalDir, Path dataDir) {
    return journalDir != null ? given(journalDir, dataDir) : of(dataDir);
  }

  /** The journal in {@code dir}, as the operator configured; records in the data directory move there. */
  public static JournalPlace given(Path dir, Path dataDir) {
    Path onDisk = dataDir.resolve("node");
    Path onTmpfs = RUN.resolve(instanceName(dataDir)).resolve("node");
    Path abs = dir.toAbsolutePath().normalize();
    return new JournalPlace(dir, abs.equals(onDisk.toAbsolutePath().normalize()) ? onTmpfs : onDisk, "--journal-dir");
  }

  static JournalPlace of(Path dataDir, Path runRoot, boolean inContainer) {
    Path onDisk = dataDir.resolve("node");
    Path onTmpfs = runRoot.resolve(instanceName(dataDir)).resolve("node");
    MountEntry holder;
    try {
      holder = MountTable.containing(nearestExisting(runRoot));
    } catch (StorageException e) {
      return new JournalPlace(onDisk, onTmpfs, runRoot + " cannot be examined (" + e.getMessage() + ")");
    }
    if (!holder.fsType().equals("tmpfs")) {
      return new JournalPlace(onDisk, onTmpfs, runRoot + " is on " + holder.fsType() + " (mount " + holder.mountPoint()
          + "), not a tmpfs");
    }
    if (inContainer && !MountTable.isMountPoint(runRoot)) {
      return new JournalPlace(onDisk, onTmpfs, "in a container, the tmpfs at " + holder.mountPoint()
          + " goes with the container; bind the host's " + runRoot + " in to use it");
    }
    return new JournalPlace(onTmpfs, onDisk, runRoot + " is on a tmpfs (mount " + holder.mountPoint()
        + "): records last until the reboot that takes their mounts down");
  }

  /**
   * Moves every record of {@link #other} into {@link #dir}, each copied (modification time kept) and
   * renamed into place before any is removed: a crash in between leaves copies in both, and the next
   * start moves them again. Unreadable records move too; nothing is dropped.
   *
   * @return how many files moved
   */
  public int migrate() {
    if (!Files.isDirectory(other)) {
      return 0;
    }
    try {
      List<Path> records;
      try (Stream<Path> s = Files.list(other)) {
        records = s.filter(Files::isRegularFile).sorted().toList();
      }
      if (records.isEmpty()) {
        return 0;
      }
      Files.createDirectories(dir);
      try (Stream<Path> s = Files.list(dir)) {
        for (Path stray : s.filter(p -> p.getFileName().toString().endsWith(MIGRATING)).toList()) {
          Files.delete(stray); // a copy cut short by a crash; its original is still in the other place
        }
      }
      for (Path from : records) {
        Path tmp = dir.resolve("." + from.getFileName() + MIGRATING);
        Files.copy(from, tmp, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.COPY_ATTRIBUTES);
        Files.move(tmp, dir.resolve(from.getFileName()), StandardCopyOption.ATOMIC_MOVE,
            StandardCopyOption.REPLACE_EXISTING);
      }
      for (Path from : records) {
        Files.delete(from);
      }
      return records.size();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot move the node journal from " + other + " to " + dir, e);
    }
  }

  /** A stable name for the data directory: its real path's hash, so that a symlink to it agrees. */
  static String instanceName(Path dataDir) {
    Path abs = dataDir.toAbsolutePath().normalize();
    Path existing = nearestExisting(abs);
    Path named = realPath(existing).resolve(existing.relativize(abs));
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(named.toString().getBytes(StandardCharsets.UTF_8));
      return "journal-" + HexFormat.of().formatHex(digest, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }

  private static Path nearestExisting(Path p) {
    Path at = p.toAbsolutePath().normalize();
    while (at.getParent() != null && !Files.exists(at)) {
      at = at.getParent();
    }
    return at;
  }

  private static Path realPath(Path p) {
    try {
      return p.toRealPath();
    } catch (IOException e) {
      return p;
    }
  }

  /** Whether this process runs in a container, by the marks container runtimes leave. */
  private static boolean inContainer() {
    return Files.exists(Path.of("/.dockerenv")) || Files.exists(Path.of("/run/.containerenv"))
        || System.getenv("container") != null;
  }
}

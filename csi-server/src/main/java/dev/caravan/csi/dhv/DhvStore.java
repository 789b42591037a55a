package dev.caravan.csi.dhv;

import dev.caravan.storage.file.AtomicFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;

/**
 * The plugin's state under {@code <data-dir>/dhv}, every name derived from a validated UUID:
 *
 * <pre>
 *   volumes/&lt;volume id&gt;.properties          the {@link DhvRecord} (written atomically, synced)
 *   locks/&lt;volume id&gt;.lock                  serializes every operation on the volume, across processes
 *   nodes/&lt;node id&gt;/journal/&lt;volume id&gt;/  the node journal of that volume on that node
 * </pre>
 *
 * One journal directory per volume: Nomad runs the agent-start creates of all volumes at once, each
 * in its own process, and a journal is only ever opened under its volume's lock.
 */
final class DhvStore {
  private final Path dir;

  DhvStore(Path dataDir) {
    this.dir = dataDir.resolve("dhv");
    try {
      Files.createDirectories(dir.resolve("volumes"));
      Files.createDirectories(dir.resolve("locks"));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + dir, e);
    }
  }

  Optional<DhvRecord> read(String volumeId) {
    try {
      return Optional.of(DhvRecord.decode(Files.readAllBytes(record(volumeId))));
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + record(volumeId), e);
    }
  }

  void write(DhvRecord r) {
    AtomicFiles.write(record(r.volumeId()), r.encode());
  }

  void remove(String volumeId) {
    try {
      Files.deleteIfExists(record(volumeId));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove " + record(volumeId), e);
    }
  }

  Path journalDir(String nodeId, String volumeId) {
    return dir.resolve("nodes").resolve(nodeId).resolve("journal").resolve(volumeId);
  }

  /** Removes a volume's journal directory once the journal in it is empty. */
  void removeJournalDir(String nodeId, String volumeId) {
    try {
      Files.deleteIfExists(journalDir(nodeId, volumeId));
    } catch (DirectoryNotEmptyException e) {
      throw new IllegalStateException("the node journal of " + volumeId + " still has records", e);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove " + journalDir(nodeId, volumeId), e);
    }
  }

  /**
   * Waits for and takes the volume's lock (an fcntl lock, released by the kernel when the process
   * ends however it ends, SIGKILL included). The lock file stays: removing it would let a waiter hold
   * a lock on a file nobody else opens any more.
   */
  AutoCloseable lock(String volumeId) {
    Path file = dir.resolve("locks").resolve(volumeId + ".lock");
    try {
      FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      try {
        ch.lock();
      } catch (IOException | RuntimeException e) {
        ch.close();
        throw e;
      }
      return ch;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot lock " + file, e);
    }
  }

  private Path record(String volumeId) {
    return dir.resolve("volumes").resolve(volumeId + ".properties");
  }
}

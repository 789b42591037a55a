package dev.caravan.csi.peer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * A coordinator's durable record of "the volume named N is being made on node O", written before the
 * create is sent to O and removed once O has answered for sure. A create that the coordinator, the
 * owner or the network lost midway leaves the record, and the retry goes to O whatever the nodes'
 * free space says by then: O finishes (or returns) its volume, and no second node makes another.
 * One file per name (named by the name's SHA-256), replaced atomically and synced.
 */
final class NameClaims {
  private final Path dir;

  NameClaims(Path dir) {
    this.dir = dir;
  }

  /** The node a create of {@code name} was sent to and has not answered for sure; empty when none. */
  Optional<String> owner(String name) {
    Path file = file(name);
    try {
      if (!Files.exists(file)) {
        return Optional.empty();
      }
      List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
      // A record of another name with the same hash (never seen for SHA-256) is not this name's.
      if (lines.size() < 2 || !lines.get(1).equals(name)) {
        return Optional.empty();
      }
      return Optional.of(lines.get(0));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the placement record " + file, e);
    }
  }

  /** Records that {@code name} is being made on {@code node}; durable when it returns. */
  void claim(String name, String node) {
    Path file = file(name);
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try {
      Files.createDirectories(dir);
      try (FileChannel c = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
          StandardOpenOption.TRUNCATE_EXISTING)) {
        c.write(StandardCharsets.UTF_8.encode(node + "\n" + name + "\n"));
        c.force(true);
      }
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      syncDir();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the placement record " + file, e);
    }
  }

  /** Forgets {@code name}'s record: its owner answered for sure (made it, or refused with nothing made). */
  void release(String name) {
    try {
      if (Files.deleteIfExists(file(name))) {
        syncDir();
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove the placement record of " + name + " in " + dir, e);
    }
  }

  private void syncDir() throws IOException {
    try (FileChannel c = FileChannel.open(dir, StandardOpenOption.READ)) {
      c.force(true);
    }
  }

  private Path file(String name) {
    try {
      byte[] hash = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
      return dir.resolve(HexFormat.of().formatHex(hash));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }
}

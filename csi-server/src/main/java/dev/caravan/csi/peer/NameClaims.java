package dev.caravan.csi.peer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A home's lasting record of "the volume named N is on node O" ({@link HomeAuthority}): written,
 * and synced, before O is asked to create, and kept while O holds it, so that every later create of
 * N goes to O and only to O, whatever the nodes' free space says by then. A create the home, the owner
 * or the network lost midway therefore finishes on O, and no second node makes another. O's
 * DeleteVolume asks the home to release the record once O holds nothing of N; a record left behind
 * (the home was down then, or the create never made anything) is harmless: it only sends the next
 * create of N to O, which makes it or answers. One file per name (named by the name's SHA-256),
 * replaced atomically.
 */
final class NameClaims {
  private final Path dir;

  NameClaims(Path dir) {
    this.dir = dir;
  }

  /** The node the volume named {@code name} is on, or was sent to; empty when none is recorded. */
  Optional<String> owner(String name) {
    return read(file(name)).filter(c -> c.name().equals(name)).map(Claim::owner);
  }

  /** Every record, name to owner. */
  Map<String, String> all() {
    Map<String, String> out = new TreeMap<>();
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (Stream<Path> files = Files.list(dir)) {
      files.filter(f -> !f.getFileName().toString().endsWith(".tmp"))
          .forEach(f -> read(f).ifPresent(c -> out.put(c.name(), c.owner())));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list the name claims in " + dir, e);
    }
    return out;
  }

  /** Records that {@code name} is on {@code node}; durable when it returns. */
  void claim(String name, String node) {
    if (owner(name).filter(node::equals).isPresent()) {
      return;
    }
    StateFiles.write(file(name), node + "\n" + name + "\n");
  }

  /** Forgets {@code name}'s record: its owner holds nothing of that name. */
  void release(String name) {
    StateFiles.delete(file(name));
  }

  private record Claim(String owner, String name) {}

  private static Optional<Claim> read(Path file) {
    try {
      if (!Files.exists(file)) {
        return Optional.empty();
      }
      List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
      // A record of another name with the same hash (never seen for SHA-256) is not this name's.
      return lines.size() < 2 ? Optional.empty() : Optional.of(new Claim(lines.get(0), lines.get(1)));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the name claim " + file, e);
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

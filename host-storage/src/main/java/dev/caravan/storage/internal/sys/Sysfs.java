package dev.caravan.storage.internal.sys;

import dev.caravan.storage.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/** Reads of sysfs directories, where objects come and go as the kernel attaches and detaches them. */
public final class Sysfs {
  private Sysfs() {}

  /** The entries of {@code dir}, sorted; none when the directory is gone (its object went away). */
  public static List<Path> entries(Path dir) {
    try (Stream<Path> entries = Files.list(dir)) {
      return entries.sorted().toList();
    } catch (NoSuchFileException e) {
      return List.of();
    } catch (IOException e) {
      throw new StorageException("cannot list " + dir + ": " + e, e);
    }
  }

  /** An attribute's text, stripped; empty when the file is gone (its object went away). */
  public static Optional<String> attribute(Path file) {
    try {
      return Optional.of(Files.readString(file, StandardCharsets.UTF_8).strip());
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new StorageException("cannot read " + file + ": " + e, e);
    }
  }
}

package dev.caravan.csi.node;

import dev.caravan.storage.mount.ConfinedMounts;
import dev.caravan.storage.mount.MountFlag;
import dev.caravan.storage.mount.Mounts;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Where the node engine creates, mounts, unmounts and removes. A path below an allowed root goes
 * through {@link ConfinedMounts}: resolved from the root's descriptor without following a link, and
 * acted on by descriptor, so a symlink swapped in after {@link AllowedRoots} checked the path cannot
 * move anything outside the root. A path with no root (the DHV plugin's mount paths, which Nomad's
 * client configuration names, or an engine given no roots) goes by name, as {@link Mounts} does.
 */
final class HostPaths {
  private final Optional<AllowedRoots> roots;

  HostPaths(Optional<AllowedRoots> roots) {
    this.roots = roots;
  }

  private Optional<Path> rootOf(Path path) {
    return roots.flatMap(r -> r.rootOf(path));
  }

  /** Creates {@code dir} (and missing parents); true when it was created here. */
  boolean makeDirectory(Path dir) {
    Optional<Path> root = rootOf(dir);
    if (root.isPresent()) {
      return ConfinedMounts.makeDirectories(root.get(), dir);
    }
    try {
      if (Files.isDirectory(dir)) {
        return false;
      }
      Files.createDirectories(dir);
      return true;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create directory " + dir, e);
    }
  }

  /** Creates the empty file {@code file} (and missing parents); true when it was created here. */
  boolean createFile(Path file) {
    Optional<Path> root = rootOf(file);
    if (root.isPresent()) {
      return ConfinedMounts.createFile(root.get(), file);
    }
    try {
      if (Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
        return false;
      }
      Path parent = file.getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Files.createFile(file);
      return true;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create target file " + file, e);
    }
  }

  /** Removes {@code path} if it is an empty directory or an empty file; false when it stays. */
  boolean removeIfEmpty(Path path) {
    Optional<Path> root = rootOf(path);
    if (root.isPresent()) {
      return ConfinedMounts.removeIfEmpty(root.get(), path);
    }
    try {
      if (Files.isDirectory(path, LinkOption.NOFOLLOW_LINKS)
          || (Files.isRegularFile(path, LinkOption.NOFOLLOW_LINKS) && Files.size(path) == 0)) {
        return Files.deleteIfExists(path);
      }
      return false;
    } catch (DirectoryNotEmptyException e) {
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove " + path, e);
    }
  }

  /** Binds {@code source} onto {@code target}; the bind's mount id when both lie below a root. */
  OptionalInt bind(Path source, Path target, boolean readOnly) {
    Optional<Path> sourceRoot = rootOf(source);
    Optional<Path> targetRoot = rootOf(target);
    if (sourceRoot.isPresent() && targetRoot.isPresent()) {
      return OptionalInt.of(ConfinedMounts.bind(sourceRoot.get(), source, targetRoot.get(), target, readOnly));
    }
    Mounts.bind(source, target, readOnly);
    return OptionalInt.empty();
  }

  /** Binds the device node {@code device} onto the file {@code target}. */
  OptionalInt bindDevice(Path device, Path target, boolean readOnly) {
    Optional<Path> root = rootOf(target);
    if (root.isPresent()) {
      return OptionalInt.of(ConfinedMounts.bindDevice(device, root.get(), target, readOnly));
    }
    Mounts.bind(device, target, readOnly);
    return OptionalInt.empty();
  }

  /** Mounts the filesystem on {@code device} at {@code target}. */
  OptionalInt mount(Path device, Path target, String fsType, Set<MountFlag> flags, String data) {
    Optional<Path> root = rootOf(target);
    if (root.isPresent()) {
      return OptionalInt.of(ConfinedMounts.mount(device, root.get(), target, fsType, flags, data));
    }
    Mounts.mount(device, target, fsType, flags, data);
    return OptionalInt.empty();
  }

  /**
   * Unmounts the topmost mount at {@code target}, if it is the mount {@code expected} (any, when
   * not recorded); false when nothing is mounted there.
   */
  boolean unmount(Path target, OptionalInt expected) {
    Optional<Path> root = rootOf(target);
    if (root.isPresent()) {
      return ConfinedMounts.unmount(root.get(), target, expected);
    }
    return Mounts.unmount(target);
  }
}

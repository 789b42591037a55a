package dev.caravan.storage.mount;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.internal.sys.NativeAccess;
import dev.caravan.storage.internal.sys.Statx;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * This process's mount table, from /proc/self/mountinfo (see proc_pid_mountinfo(5)).
 *
 * <p>"Is something mounted at this path, and which mount" is asked on every publish, unpublish and
 * stats call, and a read of mountinfo costs tens of microseconds, growing with every mount on the
 * host (a Nomad node has hundreds). So {@link #isMountPoint} and {@link #at} first ask {@code
 * statx(2)} ({@link Statx}: the mount id and whether the path is that mount's root): a path that is
 * not a mount point, the common case before a publish, costs one syscall, and a mount point costs
 * that plus one read to find its entry by id. On a kernel before 5.8 they read mountinfo as before.
 */
public final class MountTable {
  private static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

  private MountTable() {}

  public static List<MountEntry> read() {
    try {
      return parse(new String(Files.readAllBytes(MOUNTINFO), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new StorageException("cannot read " + MOUNTINFO, e);
    }
  }

  /**
   * Parses mountinfo text. Each line is {@code id parent major:minor root mount-point options
   * [optional fields...] - fstype source super-options}; there may be any number of optional
   * fields, so the {@code "-"} is what ends them. Paths, the source and the type have space, tab,
   * newline and backslash escaped as octal ({@code \040}).
   */
  public static List<MountEntry> parse(String text) {
    List<MountEntry> entries = new ArrayList<>();
    String[] lines = text.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      if (!lines[i].isEmpty()) {
        entries.add(parseLine(lines[i], i + 1));
      }
    }
    return List.copyOf(entries);
  }

  /**
   * The mount on top at exactly {@code mountPoint}, after resolving symlinks in its parent
   * directories; empty when nothing is mounted there or the path does not exist. A symlink at
   * {@code mountPoint} itself is never a mount point: the answer is empty rather than the answer for
   * whatever it points at, so that no caller acts on another mount through a link.
   */
  public static Optional<MountEntry> at(Path mountPoint) {
    NativeAccess.require();
    if (Statx.supported()) {
      Optional<Statx> here = Statx.of(mountPoint).filter(s -> s.mountRoot() && !s.symlink());
      if (here.isEmpty()) {
        return Optional.empty();
      }
      // statx sees the topmost mount at the path, as path lookup does: find it by its id.
      int id = here.get().mountId();
      Optional<MountEntry> entry = read().stream().filter(e -> e.id() == id).findFirst();
      if (entry.isPresent()) {
        return entry;
      }
      // unmounted (and perhaps replaced) between the two looks: answer from the table alone
    }
    return fromMountinfo(read(), mountPoint);
  }

  /**
   * The mount that {@code path} lies on, symlinks followed as path lookup follows them: the
   * topmost mount at the longest mount point that contains its real path. The path must exist.
   */
  public static MountEntry containing(Path path) {
    NativeAccess.require();
    Path real;
    try {
      real = path.toRealPath();
    } catch (IOException e) {
      throw new StorageException("cannot resolve " + path, e);
    }
    List<MountEntry> table = read();
    if (Statx.supported()) {
      Optional<Statx> here = Statx.of(real);
      if (here.isPresent()) {
        int id = here.get().mountId();
        Optional<MountEntry> entry = table.stream().filter(e -> e.id() == id).findFirst();
        if (entry.isPresent()) {
          return entry.get();
        }
      }
    }
    for (Path p = real; p != null; p = p.getParent()) {
      Optional<MountEntry> top = fromMountinfo(table, p);
      if (top.isPresent()) {
        return top.get();
      }
    }
    throw new StorageException("no mount in /proc/self/mountinfo contains " + real);
  }

  /** {@link #at} from an already read table alone, as on a kernel without statx's mount id. */
  static Optional<MountEntry> fromMountinfo(List<MountEntry> table, Path mountPoint) {
    List<MountEntry> here = stackedAt(table, mountPoint);
    // Mounting over a mount point makes the new mount the child of the one it covers, so the
    // topmost is the one no other mount here has as its parent.
    return here.stream()
        .filter(entry -> here.stream().noneMatch(other -> other.parentId() == entry.id()))
        .findFirst();
  }

  /**
   * Every mount stacked at exactly {@code mountPoint} in an already read {@code table}, resolved as
   * {@link #at} does (parents resolved, a symlink at the path itself never followed); empty when
   * nothing is mounted there or the path does not exist.
   */
  public static List<MountEntry> stackedAt(List<MountEntry> table, Path mountPoint) {
    Optional<Path> resolved = resolve(mountPoint);
    if (resolved.isEmpty()) {
      return List.of();
    }
    return table.stream().filter(entry -> entry.mountPoint().equals(resolved.get())).toList();
  }

  /**
   * The path as mountinfo would show it if something were mounted there: its real path, unless the
   * path is a symlink (then empty: a symlink is not where anything is mounted) or does not exist.
   */
  static Optional<Path> resolve(Path mountPoint) {
    if (Files.isSymbolicLink(mountPoint)) {
      return Optional.empty();
    }
    try {
      return Optional.of(mountPoint.toRealPath());
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new StorageException("cannot resolve " + mountPoint, e);
    }
  }

  /** Whether something is mounted at exactly {@code path}, resolved as {@link #at} does. */
  public static boolean isMountPoint(Path path) {
    NativeAccess.require();
    if (Statx.supported()) {
      return Statx.of(path).filter(s -> s.mountRoot() && !s.symlink()).isPresent();
    }
    return fromMountinfo(read(), path).isPresent();
  }

  private static MountEntry parseLine(String line, int lineNumber) {
    String[] fields = line.split(" ", -1);
    int separator = -1;
    for (int i = 6; i < fields.length; i++) {
      if (fields[i].equals("-")) {
        separator = i;
        break;
      }
    }
    if (separator < 0 || fields.length != separator + 4) {
      throw malformed(line, lineNumber, null);
    }
    String[] majorMinor = fields[2].split(":", -1);
    try {
      if (majorMinor.length != 2) {
        throw malformed(line, lineNumber, null);
      }
      return new MountEntry(
          Integer.parseInt(fields[0]),
          Integer.parseInt(fields[1]),
          Integer.parseInt(majorMinor[0]) + ":" + Integer.parseInt(majorMinor[1]),
          unescape(fields[3]),
          Path.of(unescape(fields[4])),
          fields[5],
          List.of(fields).subList(6, separator),
          unescape(fields[separator + 1]),
          unescape(fields[separator + 2]),
          fields[separator + 3]);
    } catch (NumberFormatException e) {
      throw malformed(line, lineNumber, e);
    }
  }

  // The kernel escapes bytes, so a path's UTF-8 is rebuilt byte by byte before decoding.
  private static String unescape(String field) {
    if (field.indexOf('\\') < 0) {
      return field;
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(field.length());
    int copied = 0;
    for (int i = field.indexOf('\\'); i >= 0; i = field.indexOf('\\', i + 1)) {
      if (isOctal(field, i + 1)) {
        bytes.writeBytes(field.substring(copied, i).getBytes(StandardCharsets.UTF_8));
        bytes.write(Integer.parseInt(field, i + 1, i + 4, 8));
        i += 3;
        copied = i + 1;
      }
    }
    bytes.writeBytes(field.substring(copied).getBytes(StandardCharsets.UTF_8));
    return bytes.toString(StandardCharsets.UTF_8);
  }

  private static boolean isOctal(String field, int from) {
    if (from + 3 > field.length()) {
      return false;
    }
    for (int i = from; i < from + 3; i++) {
      char c = field.charAt(i);
      if (c < '0' || c > '7') {
        return false;
      }
    }
    return true;
  }

  private static StorageException malformed(String line, int lineNumber, Throwable cause) {
    return new StorageException("malformed mountinfo line " + lineNumber + ": " + line, cause);
  }
}

package dev.caravan.csi.node;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Optional;

/**
 * The directories below which the node service stages and publishes, and the one way every path,
 * from a request or from the journal, is turned into the host path the node engine works on.
 *
 * <p>A path is used as {@link #canonical} makes it: its parent directories resolved to their real
 * path, its last component kept as it is and never followed. That is the form the mount table shows,
 * so journal and mount table compare equal however the path was spelt (a symlinked Nomad data
 * directory included). A request path is accepted ({@link #resolve}) only if
 *
 * <ul>
 *   <li>its canonical form lies strictly below one of the roots (resolved once, at start);
 *   <li>no directory between that root and the path is a symlink (the roots themselves and anything
 *       above them may be: that is how a data directory is moved to another disk);
 *   <li>the path itself is not a symlink.
 * </ul>
 *
 * Otherwise it is INVALID_ARGUMENT naming the field, the roots and the rule, before anything is
 * created or mounted. The checks run on the live filesystem, so a link swapped in afterwards by
 * someone with write access below the root is not caught here: the node engine resolves each path
 * again from a descriptor of its root ({@link #rootOf}), following no link, and creates, mounts and
 * unmounts by that descriptor ({@code HostPaths}).
 */
public final class AllowedRoots {
  /**
   * Where Nomad roots the paths it sends when the endpoint gives no other hint: the default {@code
   * stage_publish_base_dir} inside a plugin task.
   */
  public static final Path NOMAD_TASK_ROOT = Path.of("/local/csi");

  private final List<Path> configured;
  private final List<Path> resolved;
  /** The resolved roots known to be real directories: paths spelt below one of them take {@link #resolveBelow}. */
  private volatile List<Path> real;

  private AllowedRoots(List<Path> configured, List<Path> resolved) {
    this.configured = List.copyOf(configured);
    this.resolved = List.copyOf(resolved);
    this.real = resolved.stream().filter(AllowedRoots::isRealDirectory).toList();
  }

  /** The roots, each resolved now (as far as it exists) to its real path. */
  public static AllowedRoots of(List<Path> roots) {
    if (roots.isEmpty()) {
      throw new IllegalArgumentException("at least one allowed root is needed");
    }
    for (Path r : roots) {
      if (!r.isAbsolute() || r.getParent() == null) {
        throw new IllegalArgumentException("an allowed root must be an absolute path other than /: " + r);
      }
    }
    List<Path> normalized = roots.stream().map(Path::normalize).toList();
    return new AllowedRoots(normalized, normalized.stream().map(AllowedRoots::realPrefix).toList());
  }

  /** Whether {@code root} is a directory whose real path is itself: nothing on its way is a link. */
  private static boolean isRealDirectory(Path root) {
    try {
      return Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS) && root.toRealPath().equals(root);
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * The real roots {@code path} is spelt below. A root that did not exist at start (the plugin may
   * make it, with its socket's directory) is looked at again, and once it is a real directory it is
   * one from then on, like the roots that were at start.
   */
  private Optional<Path> realRootAbove(Path path) {
    Optional<Path> found = strictlyAbove(real, path);
    if (found.isPresent() || real.size() == resolved.size()) {
      return found;
    }
    synchronized (this) {
      real = resolved.stream().filter(r -> real.contains(r) || isRealDirectory(r)).toList();
    }
    return strictlyAbove(real, path);
  }

  /**
   * The roots to use when none are configured: {@code <state_dir>/csi} when the endpoint has Nomad's
   * host layout ({@code <state_dir>/csi/plugins/<alloc-id>/csi.sock}, what a plugin task without
   * filesystem isolation is given, whose mount roots {@code <state_dir>/csi/<type>/<plugin-id>} lie
   * below it); otherwise {@link #NOMAD_TASK_ROOT}, where Nomad roots the paths inside a task.
   */
  public static List<Path> defaultFor(Path socket) {
    Path s = socket.toAbsolutePath().normalize();
    Path plugins = s.getParent() == null ? null : s.getParent().getParent();
    Path csi = plugins == null ? null : plugins.getParent();
    if (named(s, "csi.sock") && named(plugins, "plugins") && named(csi, "csi")) {
      return List.of(csi);
    }
    return List.of(NOMAD_TASK_ROOT);
  }

  private static boolean named(Path p, String name) {
    return p != null && p.getFileName() != null && p.getFileName().toString().equals(name);
  }

  /** The roots as configured. */
  public List<Path> configured() {
    return configured;
  }

  /** The roots' real paths, as resolved at start. */
  public List<Path> resolved() {
    return resolved;
  }

  /**
   * {@code path} (absolute and normalized) as the node engine uses it, if it passes the rules in the
   * class comment; INVALID_ARGUMENT naming {@code field} otherwise.
   */
  public Path resolve(String field, Path path) {
    Optional<Path> spelt = path.equals(path.normalize()) ? realRootAbove(path) : Optional.empty();
    if (spelt.isPresent()) {
      return resolveBelow(field, path, spelt.get());
    }
    for (Path p = path.getParent(); p != null && p.getParent() != null; p = p.getParent()) {
      if (Files.isSymbolicLink(p)) {
        refuseLink(field, path, p);
      }
    }
    refuseIfLink(field, path);
    Path real = canonical(path);
    if (rootOf(real).isEmpty()) {
      throw CsiException.invalid(
          field + " '" + IdRules.printable(path.toString()) + "'"
              + (real.equals(path) ? "" : " (really " + real + ")") + " is not below an allowed root "
              + describeRoots() + ": the plugin stages and publishes only below the directories it is given"
              + " (--allowed-root; by default the Nomad mount root its endpoint implies)");
    }
    return real;
  }

  /**
   * {@link #resolve} of a path written below {@code root}, a root that is a real directory:
   * everything above the root is its real path already, so only the directories between the root and
   * the path, and the path itself, can be links. An lstat of each of those is the whole check, and
   * with none a link the path is its own canonical form (Nomad's paths are spelt this way: a few
   * syscalls rather than an lstat and a readlink for every component from {@code /}, twice).
   */
  private Path resolveBelow(String field, Path path, Path root) {
    for (Path p = path.getParent(); !p.equals(root); p = p.getParent()) {
      if (Files.isSymbolicLink(p)) {
        refuseLink(field, path, p);
      }
    }
    refuseIfLink(field, path);
    return path;
  }

  private static void refuseIfLink(String field, Path path) {
    if (Files.isSymbolicLink(path)) {
      throw CsiException.invalid(
          field + " '" + IdRules.printable(path.toString()) + "' is a symlink (-> " + target(path) + "): the"
              + " plugin never mounts on, unmounts or removes a path through a link");
    }
  }

  /** Refuses {@code path} when the symlink {@code link} on its way lies below an allowed root. */
  private void refuseLink(String field, Path path, Path link) {
    Path at = canonical(link);
    Optional<Path> root = rootOf(at);
    if (root.isPresent()) {
      throw CsiException.invalid(
          field + " '" + IdRules.printable(path.toString()) + "' passes through the symlink '" + link + "' ("
              + at + " -> " + target(link) + ") below the allowed root " + root.get() + ": no symlink may lie"
              + " between an allowed root and a path the plugin mounts on");
    }
  }

  private String describeRoots() {
    return configured.equals(resolved) ? configured.toString() : configured + " (really " + resolved + ")";
  }

  /** The resolved root strictly above {@code real} (a path as {@link #resolve} returns it), if any. */
  public Optional<Path> rootOf(Path real) {
    return strictlyAbove(resolved, real);
  }

  /** The first of {@code roots} that {@code path} lies strictly below, as written. */
  private static Optional<Path> strictlyAbove(List<Path> roots, Path path) {
    return roots.stream().filter(r -> path.startsWith(r) && !path.equals(r)).findFirst();
  }

  /**
   * {@code path} with its parent directories resolved to their real path (as far as they exist; the
   * missing rest is kept as written) and its last component kept, never followed: where a mount at
   * {@code path} would show in the mount table.
   */
  public static Path canonical(Path path) {
    Path parent = path.getParent();
    if (parent == null || path.getFileName() == null) {
      return path;
    }
    return realPrefix(parent).resolve(path.getFileName());
  }

  /** {@code dir} resolved as far as it exists, the rest appended as written. */
  private static Path realPrefix(Path dir) {
    Deque<Path> missing = new ArrayDeque<>();
    for (Path existing = dir; existing != null; existing = existing.getParent()) {
      try {
        Path real = existing.toRealPath();
        for (Path name : missing) {
          real = real.resolve(name);
        }
        return real;
      } catch (NoSuchFileException e) {
        if (existing.getFileName() != null) {
          missing.push(existing.getFileName());
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot resolve " + existing, e);
      }
    }
    return dir;
  }

  private static String target(Path link) {
    try {
      return Files.readSymbolicLink(link).toString();
    } catch (IOException e) {
      return "?";
    }
  }

  @Override
  public String toString() {
    return describeRoots();
  }
}

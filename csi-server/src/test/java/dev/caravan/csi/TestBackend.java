package dev.caravan.csi;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * A backend the conformance suites run on, with an oracle that sees its storage without going through
 * the plugin. One suite, every backend: a suite is an abstract class {@code XxxConformance} whose
 * tests start their plugin with {@code PluginFixture.start(backend())}, and each backend gets a
 * two-line subclass, {@code XxxConformanceOnFileTest} (runs on the host) and {@code
 * XxxConformanceOnLocalTest} (real OpenZFS: {@code scripts/guest-suite} runs every {@code *OnLocalTest}
 * in the guest; on the host its tests are skipped, each naming the reason).
 */
abstract class TestBackend {
  static TestBackend file() {
    return new FileTestBackend();
  }

  static TestBackend local() {
    return new LocalTestBackend();
  }

  abstract String driver();

  /** Why this backend cannot run on this machine; empty when it can. */
  abstract Optional<String> missing();

  /** Skips the calling test, with the reason, when this backend cannot run here. */
  final void assumeAvailable() {
    Optional<String> why = missing();
    assumeTrue(why.isEmpty(), () -> "the " + driver() + " backend " + why.orElse("") );
  }

  /** Backend options for a plugin whose state lives under {@code work}. */
  abstract Map<String, String> options(Path work);

  /**
   * Every storage object the backend holds for {@code work}, as the backend names them (image and
   * metadata files under the data directory; datasets and snapshots below the parent dataset).
   */
  abstract Set<String> storageObjects(Path work) throws IOException;

  /** Removes whatever the backend still holds for {@code work} (after the plugin has stopped). */
  abstract void destroyStorage(Path work) throws IOException;

  /** A volume size that every filesystem the tests use fits in (xfs needs 300 MiB). */
  long sizeFor(String fsType) {
    return "xfs".equals(fsType) ? 320L << 20 : 64L << 20;
  }

  @Override
  public String toString() {
    return driver();
  }

  /** Sparse image files under the data directory, attached through loop devices. */
  static final class FileTestBackend extends TestBackend {
    @Override
    String driver() {
      return "file";
    }

    @Override
    Optional<String> missing() {
      if (!Host.isRoot()) {
        return Optional.of("needs root (mount(2) and loop devices)");
      }
      if (!Files.exists(Path.of("/dev/loop-control"))) {
        return Optional.of("needs loop device support (/dev/loop-control)");
      }
      if (!Host.hasTool("mkfs.ext4")) {
        return Optional.of("needs mkfs.ext4 (e2fsprogs)");
      }
      return Optional.empty();
    }

    @Override
    Map<String, String> options(Path work) {
      return Map.of();
    }

    @Override
    Set<String> storageObjects(Path work) throws IOException {
      Path data = work.resolve("data");
      if (!Files.exists(data)) {
        return Set.of();
      }
      try (Stream<Path> s = Files.walk(data)) {
        return s.filter(Files::isRegularFile)
            .filter(p -> !p.startsWith(data.resolve("node")))
            .map(p -> data.relativize(p).toString())
            .collect(java.util.stream.Collectors.toCollection(TreeSet::new));
      }
    }

    @Override
    void destroyStorage(Path work) {
      // The fixture deletes the work directory, which holds every image.
    }
  }

  /**
   * Zvols below a parent dataset of their own ({@code <pool>/ct-<work dir name>}) in the pool that
   * {@code scripts/guest-test} creates; the {@code zfs} command is used only as the oracle here.
   */
  static final class LocalTestBackend extends TestBackend {
    static final String POOL = System.getenv().getOrDefault("CARAVAN_TEST_POOL", "caravan-test");

    @Override
    String driver() {
      return "local";
    }

    @Override
    Optional<String> missing() {
      if (!"1".equals(System.getenv("CARAVAN_GUEST")) || !Files.exists(Path.of("/dev/zfs"))) {
        return Optional.of("needs real ZFS: it runs in the guest kernel of scripts/guest-suite");
      }
      return Optional.empty();
    }

    static String parent(Path work) {
      return "ct-" + work.getFileName().toString().replaceAll("[^A-Za-z0-9]", "").toLowerCase(java.util.Locale.ROOT);
    }

    @Override
    Map<String, String> options(Path work) {
      return Map.of("pools", POOL, "parent-dataset", parent(work), "device-wait-seconds", "60");
    }

    @Override
    Set<String> storageObjects(Path work) {
      String out = Zfs.run("zfs", "list", "-H", "-o", "name", "-t", "all", "-r", POOL + "/" + parent(work));
      TreeSet<String> names = new TreeSet<>(out.isEmpty() ? List.of() : List.of(out.split("\n")));
      names.remove(POOL + "/" + parent(work));
      return names;
    }

    @Override
    void destroyStorage(Path work) {
      if (!Zfs.run("zfs", "list", "-H", "-o", "name", POOL + "/" + parent(work)).isEmpty()) {
        Zfs.run("zfs", "destroy", "-r", POOL + "/" + parent(work));
      }
    }
  }

  /** The {@code zfs} command as an oracle: output, or "" when {@code zfs list} finds nothing. */
  static final class Zfs {
    private Zfs() {}

    static String run(String... command) {
      try {
        Process p = new ProcessBuilder(command).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
        String err = new String(p.getErrorStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
        if (!p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS)) {
          p.destroyForcibly();
          throw new AssertionError(String.join(" ", command) + " did not finish in 120 s");
        }
        if (p.exitValue() != 0) {
          if (command[0].equals("zfs") && command[1].equals("list")) {
            return "";
          }
          throw new AssertionError(String.join(" ", command) + " failed: " + err);
        }
        return out;
      } catch (IOException e) {
        throw new AssertionError(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }
}

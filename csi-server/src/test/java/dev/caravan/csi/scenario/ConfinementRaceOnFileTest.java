package dev.caravan.csi.scenario;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Someone with write access below the allowed root keeps exchanging a directory on the way to a
 * publish target with a symlink to a decoy directory outside the root, as fast as renameat2 can,
 * while publishes and unpublishes of a staged volume run through the plugin on its socket. Nothing
 * may ever be mounted outside the root (checked in /proc/self/mountinfo while it runs and at the
 * end), and every publish either mounts inside the root or fails with INVALID_ARGUMENT, the spec's
 * code for a path the plugin refuses.
 *
 * <p>The number of publish/unpublish cycles is {@code -Dcaravan.race.cycles} (default sized for the
 * build; 10 000 by hand).
 */
class ConfinementRaceOnFileTest {
  private static final int CYCLES = Integer.getInteger("caravan.race.cycles", 800);
  private static final int AT_FDCWD = -100;
  private static final int RENAME_EXCHANGE = 2;
  private static final MethodHandle RENAMEAT2 = Linker.nativeLinker().downcallHandle(
      Linker.nativeLinker().defaultLookup().findOrThrow("renameat2"),
      FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT));

  private PluginFixture f;

  @BeforeEach
  void start() throws Exception {
    f = PluginFixture.start(TestBackend.file());
  }

  @AfterEach
  void stop() throws Exception {
    if (f != null) {
      f.close();
    }
  }

  @Test
  void aSymlinkSwappedInBetweenCheckAndMountNeverMovesAMountOutsideTheRoot() throws Throwable {
    VolumeCapability cap = Caps.mount("ext4");
    String id = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("race").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(f.backend.sizeFor("ext4"))).build()).getVolume().getVolumeId();
    Path staging = f.dir("staging/default/race/rw-file-system-single-node-writer");
    f.stage(id, staging, cap);

    // <root>/per-alloc/a1 is a real directory; <root>/per-alloc/a1-link a symlink to the decoy, which
    // has the same layout, outside the root. The swapper exchanges the two names.
    Path real = f.dir("per-alloc/a1");
    Files.createDirectories(real.resolve("vol"));
    Path link = real.resolveSibling("a1-link");
    Path decoy = f.work.resolve("decoy");
    Files.createDirectories(decoy.resolve("vol"));
    Files.createSymbolicLink(link, decoy);
    Path target = real.resolve("vol/target");

    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong swaps = new AtomicLong();
    AtomicLong looks = new AtomicLong();
    List<String> violations = Collections.synchronizedList(new ArrayList<>());
    Thread swapper = Thread.ofPlatform().name("swapper").start(() -> {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment a = arena.allocateFrom(real.toString());
        MemorySegment b = arena.allocateFrom(link.toString());
        while (!stop.get()) {
          if ((int) RENAMEAT2.invokeExact(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0) {
            swaps.incrementAndGet();
          }
        }
      } catch (Throwable t) {
        violations.add("the swapper failed: " + t);
      }
    });
    Thread watcher = Thread.ofPlatform().name("mountinfo-watcher").start(() -> {
      while (!stop.get()) {
        violations.addAll(outside(f.root, decoy));
        looks.incrementAndGet();
        try {
          Thread.sleep(5);
        } catch (InterruptedException e) {
          return;
        }
      }
    });

    Map<String, Integer> outcomes = new TreeMap<>();
    long started = System.nanoTime();
    try {
      for (int i = 0; i < CYCLES && violations.isEmpty(); i++) {
        String published = attempt(() -> f.publish(id, staging, target, cap));
        outcomes.merge("publish " + published, 1, Integer::sum);
        if (published.equals("OK") && mountsInside(f.root).isEmpty()) {
          violations.add("publish " + i + " succeeded but nothing is mounted at a target inside the root");
        }
        outcomes.merge("unpublish " + attempt(() -> f.unpublish(id, target)), 1, Integer::sum);
      }
    } finally {
      stop.set(true);
      swapper.join();
      watcher.join();
    }
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    System.out.printf("%d cycles in %d ms, %d swaps, %d mountinfo looks: %s%n", CYCLES, millis, swaps.get(),
        looks.get(), outcomes);

    violations.addAll(outside(f.root, decoy));
    assertThat(violations).as("mounts outside the allowed root, or publishes that mounted nothing").isEmpty();
    assertThat(outcomes.keySet()).as("every refusal is INVALID_ARGUMENT")
        .allMatch(k -> k.endsWith(" OK") || k.endsWith(" INVALID_ARGUMENT"));
    assertThat(swaps.get()).as("the swapper ran").isPositive();

    // Put the real directory back under its name, then clean up through the plugin.
    if (Files.isSymbolicLink(real)) {
      swap(real, link);
    }
    f.unpublish(id, target);
    assertThat(mountsInside(f.root)).isEmpty();
    f.unstage(id, staging);
  }

  /** The mounts below the fixture's directory that are not below the root, and any in the decoy. */
  private List<String> outside(Path root, Path decoy) {
    List<String> found = new ArrayList<>();
    for (MountEntry m : MountTable.read()) {
      Path p = m.mountPoint();
      if (p.startsWith(decoy) || (p.startsWith(f.work) && !p.startsWith(root) && !p.equals(f.data))) {
        found.add("a mount outside the root at " + p + " (from " + m.source() + ")");
      }
    }
    return found;
  }

  /** The publish targets mounted inside the root (under whichever name the swap left the directory). */
  private static List<Path> mountsInside(Path root) {
    return MountTable.read().stream().map(MountEntry::mountPoint)
        .filter(p -> p.startsWith(root) && p.endsWith(Path.of("vol/target"))).toList();
  }

  private static String attempt(Runnable call) {
    try {
      call.run();
      return "OK";
    } catch (StatusRuntimeException e) {
      Status.Code code = e.getStatus().getCode();
      return code.name();
    }
  }

  private static void swap(Path a, Path b) throws Throwable {
    try (Arena arena = Arena.ofConfined()) {
      int rc = (int) RENAMEAT2.invokeExact(AT_FDCWD, arena.allocateFrom(a.toString()), AT_FDCWD,
          arena.allocateFrom(b.toString()), RENAME_EXCHANGE);
      assertThat(rc).isZero();
    }
  }
}

package dev.caravan.storage.zfs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.bindings.zfs.ZfsCore;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.zfs.Lzc;
import dev.caravan.storage.internal.zfs.NvList;
import dev.caravan.storage.internal.zfs.ZfsIoctls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Helpers for the tests that need a real ZFS kernel: they run inside the qemu guest of {@code
 * scripts/guest-test}, which sets {@code CARAVAN_GUEST=1} and creates the pool named in {@code
 * CARAVAN_TEST_POOL}. Elsewhere they skip ({@link dev.caravan.storage.testing.HostRequirements#assumeZfs}).
 *
 * <p>Every run works below its own {@code pool/zt-<run>} and {@code pool/zt-<run>-dev} and leaves
 * them behind: the guest's pool lives on a scratch disk that is thrown away after the boot.
 *
 * <p>The {@code zfs}/{@code zpool} commands appear here only as test fixtures and as an independent
 * oracle (what does the CLI reserve? what does it report?); the facade itself never runs them.
 */
final class GuestZfs {
  static final String POOL =
      System.getenv().getOrDefault("CARAVAN_TEST_POOL", "caravan-test");
  static final long MIB = 1L << 20;

  private static final AtomicInteger SEQUENCE = new AtomicInteger();
  private static final String RUN = Long.toString(System.nanoTime() % 1_000_000_000L, 36);

  private GuestZfs() {}

  private static boolean rootsCreated;

  /**
   * A fresh dataset name below this run's root, {@code pool/zt-<run>/<hint>-<n>}. Volumes there get
   * no block device ({@code volmode=none} on the root): every zvol device costs udev work (zvol_id,
   * blkid), which is slow under TCG and would delay the tests that do wait for a device.
   */
  static String fresh(String hint) {
    createRoots();
    return POOL + "/zt-" + RUN + "/" + hint + "-" + SEQUENCE.incrementAndGet();
  }

  /** Like {@link #fresh(String)}, for a volume that needs its block device. */
  static String freshWithDevice(String hint) {
    createRoots();
    return POOL + "/zt-" + RUN + "-dev/" + hint + "-" + SEQUENCE.incrementAndGet();
  }

  private static synchronized void createRoots() {
    if (!rootsCreated) {
      try (NvList noDevices = NvList.create().add("volmode", 3)) { // ZFS_VOLMODE_NONE
        ZfsFailures.orThrow(
            Lzc.create(POOL + "/zt-" + RUN, ZfsCore.LZC_DATSET_TYPE_ZFS(), noDevices),
            "create",
            POOL + "/zt-" + RUN);
      }
      ZfsFailures.orThrow(
          Lzc.create(POOL + "/zt-" + RUN + "-dev", ZfsCore.LZC_DATSET_TYPE_ZFS(), null),
          "create",
          POOL + "/zt-" + RUN + "-dev");
      rootsCreated = true;
    }
  }

  // Fixtures made in-process, bypassing the facade (no marker, no checks): what another tool or
  // an administrator would have done. Faster than the CLI in the guest, where each process start
  // costs about a second.

  /** A volume (and its missing parent filesystems) without any marker. */
  static void foreignVolume(String name, long size) {
    String parent = DatasetNames.parent(name);
    if (!Lzc.exists(parent)) {
      ZfsFailures.orThrow(Lzc.create(parent, ZfsCore.LZC_DATSET_TYPE_ZFS(), null), "create", parent);
    }
    try (NvList properties = NvList.create().add("volsize", size)) {
      ZfsFailures.orThrow(Lzc.create(name, ZfsCore.LZC_DATSET_TYPE_ZVOL(), properties), "create", name);
    }
  }

  /** A filesystem with the given properties. */
  static void filesystem(String name, Map<String, ?> properties) {
    try (NvList list = NvList.of(properties)) {
      ZfsFailures.orThrow(Lzc.create(name, ZfsCore.LZC_DATSET_TYPE_ZFS(), list), "create", name);
    }
  }

  /** {@code zfs set}: one local property. */
  static void setProperty(String dataset, String property, Object value) {
    try (ZfsIoctls ioctls = ZfsIoctls.open();
        NvList list = NvList.of(Map.of(property, value))) {
      ZfsFailures.orThrow(ioctls.setProperties(dataset, list), "set", dataset);
    }
  }

  /** {@code zfs snapshot} without properties. */
  static void plainSnapshot(String snapshot) {
    ZfsFailures.orThrow(Lzc.snapshot(List.of(snapshot), null), "snapshot", snapshot);
  }

  /** {@code zfs clone}: a dependent clone of {@code snapshot}. */
  static void dependentClone(String snapshot, String clone) {
    try (Arena arena = Arena.ofConfined()) {
      int errno =
          ZfsCore.lzc_clone(
              arena.allocateFrom(clone), arena.allocateFrom(snapshot), MemorySegment.NULL);
      assertThat(errno).as("lzc_clone %s %s", snapshot, clone).isZero();
    }
  }

  /** Runs a CLI fixture command; fails the test when it fails. Returns its standard output. */
  static String cli(String... command) {
    try {
      Process process =
          new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.PIPE).start();
      process.getOutputStream().close();
      String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(process.exitValue())
          .as("%s: %s", String.join(" ", command), err)
          .isZero();
      return out.strip();
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** Runs a CLI command with {@code input} on its standard input; its exit status. */
  static int withInput(String input, String... command) {
    try {
      Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
      try (var in = process.getOutputStream()) {
        in.write(input.getBytes(StandardCharsets.UTF_8));
      }
      process.getInputStream().readAllBytes();
      assertThat(process.waitFor(120, TimeUnit.SECONDS)).isTrue();
      return process.exitValue();
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** {@code zfs get -Hp -o value PROPERTY DATASET}. */
  static String zfsGet(String property, String dataset) {
    return cli("zfs", "get", "-Hp", "-o", "value", property, dataset);
  }

  /** Deterministic pseudo-random bytes. */
  static byte[] pattern(long seed, int length) {
    byte[] bytes = new byte[length];
    new Random(seed).nextBytes(bytes);
    return bytes;
  }

  static void write(Path device, long offset, byte[] data) throws IOException {
    try (FileChannel channel = FileChannel.open(device, StandardOpenOption.WRITE)) {
      ByteBuffer buffer = ByteBuffer.wrap(data);
      while (buffer.hasRemaining()) {
        channel.write(buffer, offset + buffer.position());
      }
      channel.force(true);
    }
  }

  static byte[] read(Path device, long offset, int length) throws IOException {
    try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ)) {
      ByteBuffer buffer = ByteBuffer.allocate(length);
      while (buffer.hasRemaining()) {
        if (channel.read(buffer, offset + buffer.position()) < 0) {
          break;
        }
      }
      return buffer.array();
    }
  }

  /** The block device's size in bytes ({@code BLKGETSIZE64}). */
  static long deviceSize(Path device) {
    try (Fd fd = Libc.open(device, 0)) {
      return Libc.ioctlReadLong(fd, Ioctl.BLKGETSIZE64);
    }
  }

  /** A pool on sparse files in the guest's /tmp, for tests that break or export pools. */
  static final class FilePool implements AutoCloseable {
    final String name;
    final List<Path> files = new ArrayList<>();
    private boolean exported;

    /** {@code layout} is e.g. {@code mirror} or {@code raidz1}; one file per device. */
    FilePool(String layout, int devices, String... options) throws IOException {
      this.name = "zt" + RUN + "p" + SEQUENCE.incrementAndGet();
      List<String> command =
          new ArrayList<>(List.of("zpool", "create", "-f", "-O", "volmode=none"));
      command.addAll(List.of(options));
      command.add(name);
      command.add(layout);
      for (int i = 0; i < devices; i++) {
        Path file = Files.createTempFile(name + "-", ".vdev");
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
          channel.truncate(0);
          channel.write(ByteBuffer.wrap(new byte[1]), 256 * MIB - 1); // sparse 256 MiB
        }
        files.add(file);
        command.add(file.toString());
      }
      cli(command.toArray(String[]::new));
    }

    void export() {
      cli("zpool", "export", name);
      exported = true;
    }

    @Override
    public void close() throws IOException {
      if (!exported) {
        cli("zpool", "destroy", "-f", name);
      }
      for (Path file : files) {
        Files.deleteIfExists(file);
      }
    }
  }
}

package dev.caravan.storage.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.ToolException;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import dev.caravan.storage.testing.Signatures;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What formatIfEmpty guarantees when the device changes under it or is wanted by several callers.
 */
class FormattingTest {
  private static final long MIB = 1 << 20;
  // mkfs.xfs formats nothing smaller than 300 MiB; the images are sparse.
  private static final long SIZE = 320 * MIB;
  // Enough of a freshly made filesystem for libblkid to recognise it: the superblock and what
  // follows.
  private static final int HEAD = 64 * 1024;
  private static final byte[] PASSPHRASE = "correct horse battery".getBytes(StandardCharsets.UTF_8);
  private static final KeySlotCost CHEAPEST = new KeySlotCost(Duration.ofMillis(1), 32, 1);

  @RegisterExtension final Scratch scratch = new Scratch();

  @BeforeEach
  void requireLoopDevicesAndBothTools() {
    HostRequirements.assumeRootWithLoopDevices();
    HostRequirements.assumeTool("mkfs.ext4", "e2fsprogs");
    HostRequirements.assumeTool("mkfs.xfs", "xfsprogs");
  }

  @ParameterizedTest
  @EnumSource(FsType.class)
  void aFilesystemWrittenBetweenProbeAndMkfsIsNeverFormattedOver(FsType requested) {
    FsType written = other(requested);
    Path donor = donor(written);
    String donorUuid = Probe.probe(donor).uuid().orElseThrow();
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    try {
      assertThatThrownBy(
              () ->
                  Formatting.formatIfEmpty(
                      loop.device(),
                      requested,
                      List.of(),
                      () -> Signatures.copyHead(donor, loop.device(), HEAD)))
          .isInstanceOfSatisfying(
              DataPresentException.class,
              e -> {
                assertThat(e.device()).isEqualTo(loop.device());
                assertThat(e.found()).isEqualTo(written.id() + " filesystem");
                // Our probe had found the device empty: it was the tool that refused.
                assertThat(e.getCause())
                    .isInstanceOfSatisfying(
                        ToolException.class,
                        refusal -> assertThat(refusal.exitCode()).isEqualTo(1));
              });

      Signature after = Probe.probe(loop.device());
      assertThat(after.type()).contains(written.id());
      assertThat(after.uuid()).contains(donorUuid);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @ParameterizedTest
  @EnumSource(FsType.class)
  void aPartitionTableWrittenBetweenProbeAndMkfsIsNeverFormattedOver(FsType requested) {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    try {
      assertThatThrownBy(
              () ->
                  Formatting.formatIfEmpty(
                      loop.device(),
                      requested,
                      List.of(),
                      () -> Signatures.writeMbr(loop.device())))
          .isInstanceOfSatisfying(
              DataPresentException.class,
              e -> {
                assertThat(e.found()).isEqualTo("dos partition table");
                assertThat(e.getCause()).isInstanceOf(ToolException.class);
              });
      assertThat(Probe.probe(loop.device()).type()).contains("dos");
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void mke2fsRefusesByItselfADeviceHoldingXfs() {
    Path donor = donor(FsType.XFS);
    String donorUuid = Probe.probe(donor).uuid().orElseThrow();
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    try {
      Signatures.copyHead(donor, loop.device(), HEAD);

      assertThatThrownBy(() -> Formatting.mkfs(loop.device(), FsType.EXT4, List.of()))
          .isInstanceOfSatisfying(
              ToolException.class,
              e -> {
                assertThat(e.exitCode()).isEqualTo(1);
                assertThat(e.stderr()).contains("contains a xfs file system");
              });
      assertThat(Probe.probe(loop.device()).uuid()).contains(donorUuid);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void withoutATerminalMke2fsFormatsOverXfsWithoutAsking() {
    // Why mke2fs runs at a terminal: this is what it does anywhere else.
    Path donor = donor(FsType.XFS);
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    try {
      Signatures.copyHead(donor, loop.device(), HEAD);
      ToolRunner.run(List.of("mkfs.ext4", "-q", loop.device().toString()), Duration.ofMinutes(1));
      assertThat(Probe.probe(loop.device()).type()).contains("ext4");
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @ParameterizedTest
  @EnumSource(FsType.class)
  void aDryRunThatExitsZeroIsNotReportedAsFormatted(FsType type) {
    // mke2fs -n and mkfs.xfs -N print what they would do, write nothing and succeed.
    List<String> dryRun = List.of(type == FsType.EXT4 ? "-n" : "-N");
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    try {
      assertThatThrownBy(() -> Filesystems.formatIfEmpty(loop.device(), type, dryRun))
          .isInstanceOf(StorageException.class)
          .isNotInstanceOf(DataPresentException.class)
          .hasMessageContaining("holds no signature");
      assertThat(Probe.probe(loop.device()).isEmpty()).isTrue();
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void aFilesystemOtherThanTheRequestedOneIsNotReportedAsFormatted() {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    try {
      assertThatThrownBy(
              () -> Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of("-t", "ext2")))
          .isInstanceOf(StorageException.class)
          .isNotInstanceOf(DataPresentException.class)
          .hasMessageContaining("holds ext2 filesystem");
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @ParameterizedTest
  @EnumSource(FsType.class)
  void concurrentCallersFormatADeviceOnce(FsType type) throws Exception {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    // Half the callers name the device through a symlink: the lock belongs to the device.
    Path link = Files.createSymbolicLink(scratch.dir().resolve("link"), loop.device());
    int callers = 6;
    CyclicBarrier start = new CyclicBarrier(callers);
    List<FormatOutcome> outcomes = new ArrayList<>();
    try (ExecutorService pool = Executors.newFixedThreadPool(callers)) {
      List<Future<FormatOutcome>> calls = new ArrayList<>();
      for (int i = 0; i < callers; i++) {
        Path name = i % 2 == 0 ? loop.device() : link;
        calls.add(
            pool.submit(
                () -> {
                  start.await();
                  return Filesystems.formatIfEmpty(name, type, List.of());
                }));
      }
      for (Future<FormatOutcome> call : calls) {
        outcomes.add(call.get());
      }
    } finally {
      LoopDevices.detach(loop);
    }
    assertThat(outcomes).containsOnlyOnce(FormatOutcome.FORMATTED);
    assertThat(outcomes)
        .filteredOn(outcome -> outcome != FormatOutcome.FORMATTED)
        .hasSize(callers - 1)
        .containsOnly(FormatOutcome.ALREADY_FORMATTED);
  }

  @Test
  void aLuks2FormatOfTheDeviceWaitsWhileAnExt4FormatIsBetweenItsProbeAndMkfs() throws Exception {
    // One device, two formats: ext4 has probed it empty and is about to run mkfs when a LUKS2 format
    // of the same device starts. The LUKS2 one must wait for the ext4 one, then find ext4 and refuse:
    // without the wait it would find the device empty too, and one of the two would write over the
    // other's header.
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    CompletableFuture<Luks2.FormatOutcome> luks = new CompletableFuture<>();
    Thread[] luksThread = new Thread[1];
    try {
      FormatOutcome ext4 =
          Formatting.formatIfEmpty(
              loop.device(),
              FsType.EXT4,
              List.of(),
              () -> {
                luksThread[0] =
                    Thread.ofPlatform()
                        .name("luks2-format")
                        .start(
                            () -> {
                              try {
                                luks.complete(Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST));
                              } catch (RuntimeException e) {
                                luks.completeExceptionally(e);
                              }
                            });
                awaitWaitingForTheDeviceOrDone(luksThread[0], luks);
                assertThat(luks)
                    .as("the LUKS2 format ran while the ext4 format held the device between probe and mkfs")
                    .isNotDone();
              });
      assertThat(ext4).isEqualTo(FormatOutcome.FORMATTED);
      assertThatThrownBy(luks::get)
          .isInstanceOf(ExecutionException.class)
          .cause()
          .isInstanceOfSatisfying(
              DataPresentException.class, e -> assertThat(e.found()).isEqualTo("ext4 filesystem"));
      assertThat(Probe.probe(loop.device()).type()).contains("ext4");
    } finally {
      if (luksThread[0] != null) {
        luksThread[0].join(Duration.ofMinutes(1));
      }
      LoopDevices.detach(loop);
    }
  }

  /**
   * Waits until {@code thread} is parked in the device lock (its stack passes through the class that
   * holds the locks) or {@code done} completed, whichever comes first.
   */
  private static void awaitWaitingForTheDeviceOrDone(Thread thread, CompletableFuture<?> done) {
    long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
    while (!done.isDone() && System.nanoTime() < deadline) {
      boolean parkedInLock =
          thread.getState() == Thread.State.WAITING
              && Arrays.stream(thread.getStackTrace())
                  .anyMatch(f -> f.getClassName().endsWith(".DeviceLocks"));
      if (parkedInLock) {
        return;
      }
      LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
    }
  }

  @Test
  void aDeviceClaimedByAnotherExclusiveOpenerIsRefusedWithoutRunningMkfs() {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    try {
      try (Fd claim = Libc.open(loop.device(), LinuxUapi.O_RDONLY() | LinuxUapi.O_EXCL())) {
        for (FsType type : FsType.values()) {
          assertThatThrownBy(() -> Filesystems.formatIfEmpty(loop.device(), type, List.of()))
              .isInstanceOf(StorageException.class)
              .isNotInstanceOf(ToolException.class)
              .hasMessage(
                  "refusing to format "
                      + loop.device()
                      + ": it is in use (mounted, or held open exclusively by another program)")
              .cause()
              .isInstanceOfSatisfying(
                  SyscallException.class, e -> assertThat(e.errnoName()).isEqualTo("EBUSY"));
        }
      }
      assertThat(Probe.probe(loop.device()).isEmpty()).isTrue();
      assertThat(Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of()))
          .isEqualTo(FormatOutcome.FORMATTED);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void aMountedFilesystemIsReportedNeverFormatted() throws Exception {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    Path mnt = scratch.directory("mnt");
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
      String uuid = Probe.probe(loop.device()).uuid().orElseThrow();
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      assertThatThrownBy(() -> Probe.probeExclusive(loop.device()))
          .isInstanceOfSatisfying(
              SyscallException.class, e -> assertThat(e.errnoName()).isEqualTo("EBUSY"));

      assertThat(Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of()))
          .isEqualTo(FormatOutcome.ALREADY_FORMATTED);
      assertThatThrownBy(() -> Filesystems.formatIfEmpty(loop.device(), FsType.XFS, List.of()))
          .isInstanceOfSatisfying(
              DataPresentException.class,
              e -> {
                assertThat(e.found()).isEqualTo("ext4 filesystem");
                assertThat(e.getCause()).as("a refusal by mkfs").isNull();
              });
      Mounts.unmount(mnt);
      assertThat(Probe.probe(loop.device()).uuid()).contains(uuid);
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(loop);
    }
  }

  @Test
  void aRefusalLeavesNoStaleVerdictForTheNextFormat() throws Exception {
    Path image = scratch.image("disk.img", SIZE);
    Path donor = donor(FsType.XFS);
    LoopDevice loop = LoopDevices.attach(image, false);
    try {
      Signatures.copyHead(donor, loop.device(), HEAD);
      assertThatThrownBy(() -> Formatting.mkfs(loop.device(), FsType.EXT4, List.of()))
          .isInstanceOf(ToolException.class);
      // Empty again, behind the device node's back (its mtime stays), as when a loop device is
      // attached to a new file: the device is read afresh once nothing holds it open.
      Signatures.copyHead(scratch.image("zeros.img", HEAD), image, HEAD);
      assertThat(Probe.probe(loop.device()).isEmpty()).isTrue();

      assertThat(Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of()))
          .isEqualTo(FormatOutcome.FORMATTED);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void onlyBlockDevicesAreFormatted() {
    Path file = scratch.image("plain-file.img", SIZE);

    assertThatThrownBy(() -> Filesystems.formatIfEmpty(file, FsType.EXT4, List.of()))
        .isInstanceOf(StorageException.class)
        .hasMessage(file + " is not a block device");
    assertThat(Probe.probe(file).isEmpty()).isTrue();
  }

  @Test
  void formatsWhileOtherThreadsStartProcesses() throws Exception {
    // A process being started holds a copy of every descriptor until it runs its program: an
    // exclusive probe's descriptor copied so would still hold the device when our mkfs starts.
    int formatters = 6;
    int rounds = 5;
    AtomicBoolean formatting = new AtomicBoolean(true);
    try (ExecutorService pool = Executors.newFixedThreadPool(formatters + 2)) {
      List<Future<?>> starters = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        starters.add(
            pool.submit(
                () -> {
                  while (formatting.get()) {
                    ToolRunner.run(List.of("true"), Duration.ofMinutes(1));
                  }
                  return null;
                }));
      }
      List<Future<?>> formats = new ArrayList<>();
      for (int i = 0; i < formatters; i++) {
        int n = i;
        formats.add(
            pool.submit(
                () -> {
                  for (int round = 0; round < rounds; round++) {
                    Path image = scratch.image("disk-" + n + "-" + round + ".img", 32 * MIB);
                    LoopDevice loop = LoopDevices.attach(image, false);
                    try {
                      assertThat(Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of()))
                          .isEqualTo(FormatOutcome.FORMATTED);
                    } finally {
                      LoopDevices.detach(loop);
                    }
                  }
                  return null;
                }));
      }
      try {
        for (Future<?> format : formats) {
          format.get();
        }
      } finally {
        formatting.set(false);
      }
      for (Future<?> starter : starters) {
        starter.get();
      }
    }
  }

  /** An image file holding a real filesystem of {@code type}, made by its mkfs. */
  private Path donor(FsType type) {
    Path image = scratch.image("donor-" + type.id() + ".img", SIZE);
    String mkfs = type == FsType.EXT4 ? "mkfs.ext4" : "mkfs.xfs";
    ToolRunner.run(List.of(mkfs, "-q", image.toString()), Duration.ofMinutes(1));
    return image;
  }

  private static FsType other(FsType type) {
    return type == FsType.EXT4 ? FsType.XFS : FsType.EXT4;
  }
}

package dev.caravan.storage.fs;

import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.ToolException;
import dev.caravan.storage.block.EmptyDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.internal.sys.Errno;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@link Filesystems#formatIfEmpty}: mkfs as the format {@link EmptyDevices#formatIfEmpty} writes
 * (it takes the device's lock and probes), then probe again. The step between the first probe and
 * mkfs is open to tests, which change the device there.
 */
final class Formatting {
  private static final Duration TOOL_TIMEOUT = Duration.ofMinutes(10);
  // mke2fs checks for existing data only when its standard input and output are terminals, and
  // then asks "Proceed anyway? (y,N)": at a terminal where "n" is already typed, it refuses.
  private static final String ANSWER_NO = "n\n";
  // mke2fs's check reads libblkid's cache (/run/blkid/blkid.tab), which trusts an entry it verified
  // less than 200 s ago while the device node's mtime is unchanged: a loop device reattached to a
  // new, empty file would still "contain" the filesystem its previous file held. Without a cache
  // file, libblkid reads the device.
  private static final Map<String, String> NO_BLKID_CACHE = Map.of("BLKID_FILE", "/dev/null");

  private Formatting() {}

  /** {@code beforeMkfs} runs once the device was probed and found empty, right before mkfs. */
  static FormatOutcome formatIfEmpty(
      Path device, FsType type, List<String> mkfsOptions, Runnable beforeMkfs) {
    List<String> command = MkfsCommand.of(type, mkfsOptions, device);
    EmptyDevices.Format mkfs =
        new EmptyDevices.Format() {
          @Override
          public boolean isOn(Path dev, Signature found) {
            return is(found, type);
          }

          @Override
          public void writeTo(Path dev) {
            beforeMkfs.run();
            runChecked(dev, type, command);
          }
        };
    return EmptyDevices.formatIfEmpty(device, mkfs)
        ? FormatOutcome.FORMATTED
        : FormatOutcome.ALREADY_FORMATTED;
  }

  /** Runs {@code command} on the empty {@code device}, and checks that it made {@code type}. */
  private static void runChecked(Path device, FsType type, List<String> command) {
    try {
      run(command, type);
    } catch (ToolException e) {
      Signature now;
      try {
        now = probeAfterMkfs(device);
      } catch (RuntimeException probeFailure) {
        e.addSuppressed(probeFailure);
        throw e;
      }
      // The tool exited by itself and the device is not empty: that is what it refused.
      if (e.exitCode() > 0 && !now.isEmpty()) {
        DataPresentException refused = new DataPresentException(device, now.describe());
        refused.initCause(e);
        throw refused;
      }
      throw e;
    }
    Signature made = probeAfterMkfs(device);
    if (!is(made, type)) {
      throw new StorageException(
          command.getFirst() + " exited 0, but " + device + " holds " + made.describe());
    }
  }

  // Something may claim the device the moment mkfs lets go of it (udev's rules, an automounter):
  // the signature is read all the same, without the claim.
  private static Signature probeAfterMkfs(Path device) {
    try {
      return Probe.probeExclusive(device);
    } catch (SyscallException e) {
      if (e.errno() != Errno.EBUSY) {
        throw e;
      }
      return Probe.probe(device);
    }
  }

  private static boolean is(Signature found, FsType type) {
    return found.kind() == Signature.Kind.FILESYSTEM && found.type().equals(Optional.of(type.id()));
  }

  /**
   * The mkfs step alone: runs the tool on {@code device} without probing it first. The tool's own
   * check for existing data is the only one here.
   */
  static void mkfs(Path device, FsType type, List<String> mkfsOptions) {
    run(MkfsCommand.of(type, mkfsOptions, device), type);
  }

  private static void run(List<String> command, FsType type) {
    switch (type) {
      case EXT4 -> ToolRunner.runAtTerminal(command, ANSWER_NO, NO_BLKID_CACHE, TOOL_TIMEOUT);
      // mkfs.xfs refuses existing data without asking, terminal or not.
      case XFS -> ToolRunner.run(command, TOOL_TIMEOUT);
    }
  }
}

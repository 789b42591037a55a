package dev.caravan.storage.block;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.internal.blkid.BlkidProbe;
import dev.caravan.storage.internal.sys.Claims;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.NativeAccess;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/** Identifies what a device holds, with libblkid (in-process: no {@code blkid} binary). */
public final class Probe {
  private Probe() {}

  /**
   * Probes {@code device} for filesystems, RAID/LVM members, crypto headers and partition tables.
   * Signatures that contradict each other (two filesystems, say) are reported as {@link
   * Signature.Kind#OTHER} without a type. The device's first and last MiB are read first: when
   * they cannot be, what it holds is unknown, not nothing.
   *
   * @throws dev.caravan.storage.NativeLibraryUnavailableException when libblkid is missing
   * @throws dev.caravan.storage.UnreadableDeviceException when its first or last MiB cannot be read
   */
  public static Signature probe(Path device) {
    NativeAccess.require();
    Libc.stat(device); // a missing or inaccessible device fails here, with its errno
    try (Fd fd = Libc.open(device, LinuxUapi.O_RDONLY())) {
      ProbeRegion.requireReadable(fd, device);
      return signature(BlkidProbe.probe(fd));
    }
  }

  /**
   * Probes block device {@code device} as {@link #probe} does, through a descriptor opened with
   * {@code O_EXCL}: an exclusive claim on the device for the duration of the probe, which Linux
   * refuses while the device is mounted or claimed by another exclusive opener (another program's
   * {@code O_EXCL} open, such as a running mkfs).
   *
   * @throws dev.caravan.storage.SyscallException EBUSY when the device is mounted or claimed
   * @throws dev.caravan.storage.UnreadableDeviceException when its first or last MiB cannot be read
   * @throws StorageException when {@code device} is not a block device
   */
  public static Signature probeExclusive(Path device) {
    NativeAccess.require();
    return Claims.whileClaiming(
        () -> {
          try (Fd fd = Libc.open(device, LinuxUapi.O_RDONLY() | LinuxUapi.O_EXCL())) {
            if (!Libc.fstat(fd).isBlockDevice()) {
              throw new StorageException(device + " is not a block device");
            }
            ProbeRegion.requireReadable(fd, device);
            return signature(BlkidProbe.probe(fd));
          }
        });
  }

  private static Signature signature(BlkidProbe.Result result) {
    if (result.ambivalent()) {
      return unnamed(Signature.Kind.OTHER);
    }
    Map<String, String> values = result.values();
    if (values.containsKey("TYPE")) {
      return new Signature(
          Optional.of(values.get("TYPE")),
          Optional.ofNullable(values.get("UUID")),
          Optional.ofNullable(values.get("LABEL")),
          kind(values.get("USAGE")));
    }
    if (values.containsKey("PTTYPE")) {
      return new Signature(
          Optional.of(values.get("PTTYPE")),
          Optional.ofNullable(values.get("PTUUID")),
          Optional.empty(),
          Signature.Kind.PARTITION_TABLE);
    }
    return unnamed(values.isEmpty() ? Signature.Kind.NONE : Signature.Kind.OTHER);
  }

  private static Signature unnamed(Signature.Kind kind) {
    return new Signature(Optional.empty(), Optional.empty(), Optional.empty(), kind);
  }

  private static Signature.Kind kind(String usage) {
    return switch (usage == null ? "" : usage) {
      case "filesystem" -> Signature.Kind.FILESYSTEM;
      case "raid" -> Signature.Kind.RAID_MEMBER;
      case "crypto" -> Signature.Kind.CRYPTO;
      default -> Signature.Kind.OTHER;
    };
  }
}

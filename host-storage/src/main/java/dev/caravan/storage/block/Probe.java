package dev.caravan.storage.block;

import dev.caravan.storage.internal.blkid.BlkidProbe;
import dev.caravan.storage.internal.sys.Libc;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/** Identifies what a device holds, with libblkid (in-process: no {@code blkid} binary). */
public final class Probe {
  private Probe() {}

  /**
   * Probes {@code device} for filesystems, RAID/LVM members, crypto headers and partition tables.
   * Signatures that contradict each other (two filesystems, say) are reported as {@link
   * Signature.Kind#OTHER} without a type.
   *
   * @throws dev.caravan.storage.NativeLibraryUnavailableException when libblkid is missing
   */
  public static Signature probe(Path device) {
    Libc.stat(device); // a missing or inaccessible device fails here, with its errno
    BlkidProbe.Result result = BlkidProbe.probe(device);
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

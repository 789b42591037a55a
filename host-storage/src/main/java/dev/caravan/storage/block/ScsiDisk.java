package dev.caravan.storage.block;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * One path to a SCSI disk as the kernel sees it right now: its address on the SCSI bus ({@code
 * host:channel:target:lun}), its block device node, and the WWID that names the logical unit
 * behind it. Two paths to the same LUN (two iSCSI portals) are two {@code ScsiDisk}s with one WWID.
 * Identify a LUN by {@link #wwid()}; {@link #device()} is only where to reach it for now.
 *
 * @param address {@code host:channel:target:lun}, as in {@code /sys/bus/scsi/devices}
 * @param device the block device node, {@code /dev/sdX}
 * @param wwid the logical unit's WWID; empty when its VPD page 0x83 names it by nothing unique
 * @param vendor the INQUIRY vendor, trimmed
 * @param model the INQUIRY product, trimmed
 * @param state the SCSI device state: {@code running}, {@code offline}, {@code blocked}, ...
 */
public record ScsiDisk(
    String address, Path device, Optional<Wwid> wwid, String vendor, String model, String state) {
  public ScsiDisk {
    Objects.requireNonNull(address, "address");
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(wwid, "wwid");
    Objects.requireNonNull(vendor, "vendor");
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(state, "state");
  }

  /** The SCSI host number, the first field of {@link #address()}. */
  public int host() {
    return Integer.parseInt(address.substring(0, address.indexOf(':')));
  }

  /** The logical unit number, the last field of {@link #address()}. */
  public long lun() {
    return Long.parseLong(address.substring(address.lastIndexOf(':') + 1));
  }

  /** The kernel's name of the block device, {@code sdX}. */
  public String name() {
    return device.getFileName().toString();
  }

  /** Whether the kernel accepts I/O for it ({@code running}). */
  public boolean isRunning() {
    return state.equals("running");
  }
}

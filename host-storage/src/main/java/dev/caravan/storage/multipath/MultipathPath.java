package dev.caravan.storage.multipath;

import java.nio.file.Path;
import java.util.Objects;

/**
 * One path of a multipath map: a SCSI disk and what multipathd says about it.
 *
 * @param device the path's block device, {@code /dev/sdX}
 * @param address its SCSI address, {@code host:channel:target:lun}
 * @param state whether device-mapper uses it
 * @param checkerState the path checker's verdict ({@code ready}, {@code faulty}, {@code ghost},
 *     {@code shaky}, {@code i/o pending}, ...)
 * @param deviceState the SCSI device state ({@code running}, {@code offline}, ...)
 */
public record MultipathPath(
    Path device, String address, PathState state, String checkerState, String deviceState) {
  public MultipathPath {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(address, "address");
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(checkerState, "checkerState");
    Objects.requireNonNull(deviceState, "deviceState");
  }

  /** Active in device-mapper and found ready by the checker: I/O can go this way. */
  public boolean isUp() {
    return state == PathState.ACTIVE && checkerState.equals("ready");
  }
}

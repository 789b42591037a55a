package dev.caravan.csi.backend;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The storage side of the Node service, deliberately small: make a volume's block device appear on
 * this node and disappear again. Formatting, mounting, publishing and the node journal are the
 * generic node engine's job ({@link dev.caravan.csi.node.NodeEngine}), shared by every backend.
 */
public interface NodeBackend {
  /**
   * Makes the volume's block device present on this node (loop device, zvol node) and
   * returns its path. Idempotent: an already attached volume returns the same device.
   * NOT_FOUND if the backing object does not exist.
   */
  Path attach(VolumeRef volume);

  /**
   * Whether {@code device}, which {@link #attach} returned for the volume at some earlier time (the
   * node journal recorded it), is still that volume's device: its identity read from the device itself
   * (the loop device's backing file and inode, the zvol's name, the multipath map's WWID), never from
   * its name. A device number can be given to another volume after a reboot or a detach behind the
   * plugin's back, and a repeated stage or a publish that trusted the number would hand a workload
   * another volume's blocks. False when the device is gone or belongs to something else.
   */
  boolean holds(VolumeRef volume, Path device);

  /** Removes the device from this node; success if it is not attached. */
  void detach(VolumeRef volume);

  /**
   * As {@link #detach(VolumeRef)}, when the node engine knows the device it attached for the volume
   * (from its journal), so that a backend can detach that device instead of searching for it; a device
   * that no longer belongs to the volume is not touched. Defaults to {@link #detach(VolumeRef)}.
   */
  default void detach(VolumeRef volume, Optional<Path> device) {
    detach(volume);
  }

  /**
   * What on this node uses the volume's device, read from the host's own state (mount table, sysfs),
   * never from a journal: one entry per user, naming it (e.g. {@code dm-3 mounted at /srv/x}). Empty
   * only when nothing here uses it: what a caller that holds no journal record of the volume needs
   * before it lets another node attach it. Backends whose volumes no other node can attach have no
   * such caller and answer UNIMPLEMENTED.
   */
  default List<String> usersHere(VolumeRef volume) {
    throw new CsiException(CsiException.Kind.UNIMPLEMENTED, "this backend cannot tell what uses a volume's device");
  }

  /** Makes an attached device reflect its backing object's current size (after an expansion). */
  void refresh(VolumeRef volume);

  /**
   * As {@link #refresh(VolumeRef)}, right after {@link #attach} returned {@code device}, so that a
   * backend can refresh that device instead of searching for it. Defaults to {@link #refresh(VolumeRef)}.
   */
  default void refresh(VolumeRef volume, Path device) {
    refresh(volume);
  }

  /** Health of the backing object (e.g. "backing file missing"). */
  VolumeHealth health(VolumeRef volume);

  /**
   * Health when the node engine knows the device it attached for the volume (from its journal), so
   * that a backend can check that one device instead of searching for it. Defaults to {@link
   * #health(VolumeRef)}.
   */
  default VolumeHealth health(VolumeRef volume, Optional<Path> device) {
    return health(volume);
  }
}

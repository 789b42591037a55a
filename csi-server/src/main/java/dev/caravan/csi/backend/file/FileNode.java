package dev.caravan.csi.backend.file;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.NodeBackend;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.backend.file.Records.State;
import dev.caravan.storage.block.LoopDevices;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** Node half of the file backend: a volume's device is a loop device over its image file. */
final class FileNode implements NodeBackend {
  private final FileStore store;

  FileNode(FileStore store) {
    this.store = store;
  }

  @Override
  public Path attach(VolumeRef volume) {
    Path image = store.volumeImage(volume.volumeId());
    boolean ready = store.readVolume(volume.volumeId()).map(r -> r.state() == State.READY).orElse(false);
    if (!ready || !Files.exists(image)) {
      throw CsiException.notFound(
          "volume_id " + volume.volumeId() + " does not exist on this node (no backing file " + image + ")");
    }
    return LoopDevices.attach(image, false).device();
  }

  /** One {@code LOOP_GET_STATUS64} on the device: bound to this volume's image, by device and inode. */
  @Override
  public boolean holds(VolumeRef volume, Path device) {
    return LoopDevices.backs(device, store.volumeImage(volume.volumeId()));
  }

  @Override
  public void detach(VolumeRef volume) {
    Path image = store.volumeImage(volume.volumeId());
    if (Files.exists(image)) {
      LoopDevices.find(image).ifPresent(LoopDevices::detach);
    }
  }

  /**
   * The recorded device when it is still this volume's: one ioctl on it, instead of a look at every loop
   * device. Otherwise (not recorded, or the device went to another file, say after a reboot) the search.
   */
  @Override
  public void detach(VolumeRef volume, Optional<Path> device) {
    Path image = store.volumeImage(volume.volumeId());
    if (device.isPresent() && Files.exists(image) && LoopDevices.detachIfBacking(device.get(), image)) {
      return;
    }
    detach(volume);
  }

  @Override
  public void refresh(VolumeRef volume) {
    Path image = store.volumeImage(volume.volumeId());
    if (Files.exists(image)) {
      LoopDevices.find(image).ifPresent(LoopDevices::refreshCapacity);
    }
  }

  /** The device attach returned: no search of every loop device, no capacity change when it is current. */
  @Override
  public void refresh(VolumeRef volume, Path device) {
    LoopDevices.refreshCapacity(device, store.volumeImage(volume.volumeId()));
  }

  @Override
  public VolumeHealth health(VolumeRef volume) {
    return health(volume, Optional.empty());
  }

  /** With the device known, one ioctl on it instead of a scan of every loop device. */
  @Override
  public VolumeHealth health(VolumeRef volume, Optional<Path> device) {
    Path image = store.volumeImage(volume.volumeId());
    // The healthy case is one stat and one ioctl (backs): why it is not healthy is looked up after.
    if (device.isPresent() && LoopDevices.backs(device.get(), image)) {
      return VolumeHealth.OK;
    }
    if (!Files.exists(image)) {
      return VolumeHealth.abnormal("backing file " + image + " is missing");
    }
    if (device.isPresent()) {
      return VolumeHealth.abnormal(device.get() + " is no longer attached to " + image);
    }
    if (LoopDevices.find(image).isEmpty()) {
      return VolumeHealth.abnormal("no loop device is attached to " + image);
    }
    return VolumeHealth.OK;
  }
}

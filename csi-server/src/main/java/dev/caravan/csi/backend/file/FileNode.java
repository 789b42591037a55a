package dev.caravan.csi.backend.file;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.LuksMapping;
import dev.caravan.csi.backend.Passphrase;
import dev.caravan.csi.backend.RotationFrom;
import dev.caravan.csi.backend.NodeBackend;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.backend.file.Records.State;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.crypt.Luks2;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Node half of the file backend: a volume's device is a loop device over its image file. An encrypted
 * volume's ({@code encryption=on}) device is the LUKS2 mapping opened on that loop device with the
 * passphrase of the stage (or expand) secrets, named from the image's path ({@link Luks2#mappingName}) so
 * that a restarted plugin finds it.
 */
final class FileNode implements NodeBackend {
  private final FileStore store;
  private final KeySlotCost keySlotCost;

  FileNode(FileStore store, KeySlotCost keySlotCost) {
    this.store = store;
    this.keySlotCost = keySlotCost;
  }

  /** The cost of the key slot a volume's first stage formats its LUKS2 header with. */
  KeySlotCost keySlotCost() {
    return keySlotCost;
  }

  @Override
  public Path attach(VolumeRef volume) {
    Path image = store.volumeImage(volume.volumeId());
    boolean ready = store.readVolume(volume.volumeId()).map(r -> r.state() == State.READY).orElse(false);
    if (!ready || !Files.exists(image)) {
      throw CsiException.notFound(
          "volume_id " + volume.volumeId() + " does not exist on this node (no backing file " + image + ")");
    }
    if (!encrypted(volume)) {
      return LoopDevices.attach(image, false).device();
    }
    // The passphrases are checked before anything is attached: a missing one changes nothing here.
    try (Passphrase key = Encryption.passphrase("NodeStageVolume", volume.secrets());
        RotationFrom previous = RotationFrom.of(volume.secrets())) {
      LuksMapping.requireCryptFor(volume);
      LuksMapping mapping = mapping(volume);
      Path loop = LoopDevices.attach(image, false).device();
      mapping.formatOnceOn(loop, key, keySlotCost);
      CrashPoints.reach("stage.after-luks-format");
      // A rotation's new key slot added, the previous one's not yet destroyed: a retry opens with the
      // new passphrase and destroys it then.
      return mapping.openRotatingOn(loop, key, previous.passphrase(), keySlotCost,
          () -> CrashPoints.reach("stage.after-luks-add-slot"));
    }
  }

  /** Whether the volume was created with {@code encryption=on}: its record says so, as does its context. */
  private boolean encrypted(VolumeRef volume) {
    return store.readVolume(volume.volumeId()).map(r -> r.encrypted())
        .orElse(Encryption.Mode.ON.value().equals(volume.context().get(Encryption.PARAMETER)));
  }

  /** The volume's LUKS2 mapping, named from its image's path ({@link FileStore#mappingName}). */
  private LuksMapping mapping(VolumeRef volume) {
    return store.mapping(volume);
  }

  /** Closes the volume's mapping, if open; then the loop device under it can go. */
  private void closeMapping(VolumeRef volume) {
    if (mapping(volume).closeIfOpen()) {
      CrashPoints.reach("unstage.after-luks-close");
    }
  }

  /** One {@code LOOP_GET_STATUS64} on the device: bound to this volume's image, by device and inode. */
  @Override
  public boolean holds(VolumeRef volume, Path device) {
    Path image = store.volumeImage(volume.volumeId());
    if (!LuksMapping.isMapperDevice(device)) {
      return LoopDevices.backs(device, image);
    }
    LuksMapping mapping = mapping(volume);
    return mapping.isAt(device) && mapping.isOpenOn(loop -> LoopDevices.backs(loop, image));
  }

  @Override
  public void detach(VolumeRef volume) {
    closeMapping(volume);
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
    if (device.isPresent() && LuksMapping.isMapperDevice(device.get())) {
      detach(volume);
      return;
    }
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
    mapping(volume).growToItsDevice("NodeExpandVolume");
  }

  private void refreshAtStage(VolumeRef volume) {
    Path image = store.volumeImage(volume.volumeId());
    if (Files.exists(image)) {
      LoopDevices.find(image).ifPresent(LoopDevices::refreshCapacity);
    }
    mapping(volume).growToItsDevice("NodeStageVolume");
  }

  /** The device attach returned: no search of every loop device, no capacity change when it is current. */
  @Override
  public void refresh(VolumeRef volume, Path device) {
    if (!LuksMapping.isMapperDevice(device)) {
      LoopDevices.refreshCapacity(device, store.volumeImage(volume.volumeId()));
      return;
    }
    refreshAtStage(volume);
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
    if (device.isPresent() && LuksMapping.isMapperDevice(device.get())) {
      if (holds(volume, device.get())) {
        return VolumeHealth.OK;
      }
      return Files.exists(image)
          ? VolumeHealth.abnormal("the LUKS2 mapping " + device.get() + " is not open on " + image)
          : VolumeHealth.abnormal("backing file " + image + " is missing");
    }
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

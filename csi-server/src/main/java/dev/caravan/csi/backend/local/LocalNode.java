package dev.caravan.csi.backend.local;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.NodeBackend;
import dev.caravan.csi.backend.Passphrase;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.backend.local.LocalIds.VolumeId;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.storage.zfs.DatasetProperties;
import dev.caravan.storage.zfs.KeyStatus;
import dev.caravan.storage.zfs.WrongKeyException;
import dev.caravan.storage.zfs.Zfs;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * Node half of the {@code local} backend: a volume's device is its zvol's block device, which ZFS
 * keeps present as long as the zvol exists (an encrypted zvol's, as long as its key is loaded).
 * Attach resolves it (waiting, bounded, for udev), loading an encrypted zvol's key first; detach
 * unloads that key and otherwise has nothing to undo. The dataset is derived from the (validated) volume id, never from the volume
 * context, which the CO hands back but does not protect.
 */
final class LocalNode implements NodeBackend {
  private static final System.Logger LOG = System.getLogger(LocalNode.class.getName());
  private static final Duration REFRESH_WAIT = Duration.ofSeconds(5);

  private final Zfs zfs;
  private final LocalController controller;
  private final LocalConfig config;
  private final String nodeId;

  LocalNode(Zfs zfs, LocalController controller, LocalConfig config, String nodeId) {
    this.zfs = zfs;
    this.controller = controller;
    this.config = config;
    this.nodeId = nodeId;
  }

  /**
   * The zvol's device; an encrypted zvol's key is loaded first, from the {@code encryptionPassphrase}
   * of the stage's secrets ({@link Encryption}), since its device exists only while the key is. A key
   * loaded already is fine, once the passphrase given proves to be its passphrase.
   */
  @Override
  public Path attach(VolumeRef volume) {
    return ZfsErrorsToCsi.guard(() -> {
      VolumeId v = local(volume);
      Optional<DatasetProperties> p = controller.managedVolume(v);
      if (p.isEmpty()) {
        throw CsiException.notFound(
            "volume_id " + volume.volumeId() + " does not exist on node " + nodeId + " (no managed zvol "
                + v.dataset() + ")");
      }
      if (p.get().isEncrypted()) {
        loadKey(volume, v);
        CrashPoints.reach("local.stage.after-load-key");
      }
      return zfs.zvolDevice(v.dataset(), config.deviceWait());
    });
  }

  /**
   * Loads the zvol's key with {@code encryptionPassphrase}; when that does not open it and {@code
   * encryptionPassphrasePrevious} does, loads it with the previous one and sets the current one as
   * the zvol's passphrase ({@link Zfs#changePassphrase}: one ZFS transaction, so a crash leaves one
   * passphrase or the other, and the retry finds the key loaded and changes it then).
   */
  private void loadKey(VolumeRef volume, VolumeId v) {
    try (Passphrase passphrase = Encryption.passphrase("NodeStageVolume", volume.secrets())) {
      Optional<Passphrase> previous = Encryption.previousPassphrase(volume.secrets());
      try {
        try {
          zfs.loadKey(v.dataset(), passphrase.bytes());
          return;
        } catch (WrongKeyException e) {
          if (previous.isEmpty()) {
            throw Encryption.wrongPassphrase(volume.volumeId());
          }
        }
        try {
          zfs.loadKey(v.dataset(), previous.get().bytes());
        } catch (WrongKeyException e) {
          throw Encryption.wrongPassphrases(volume.volumeId());
        }
        CrashPoints.reach("local.stage.after-load-previous-key");
        zfs.changePassphrase(v.dataset(), passphrase.bytes());
        LOG.log(System.Logger.Level.INFO, "volume {0}: its passphrase is now secrets.{1}",
            volume.volumeId(), Encryption.SECRET);
      } finally {
        previous.ifPresent(Passphrase::close);
      }
    }
  }

  /** The volume's id, required to be this node's and inside its managed datasets (NOT_FOUND otherwise). */
  private VolumeId local(VolumeRef volume) {
    VolumeId v = LocalIds.parseVolume("volume_id", volume.volumeId());
    if (!v.node().equals(nodeId)) {
      throw CsiException.notFound(
          "volume_id " + volume.volumeId() + " is a zvol on node " + v.node() + ", not on this node (" + nodeId
              + "); its topology pins it to " + v.node());
    }
    if (!controller.inScope(v)) {
      throw CsiException.notFound(
          "volume_id " + volume.volumeId() + " is outside this node's managed datasets ("
              + config.parentDataset() + " in pools " + config.pools() + ")");
    }
    return v;
  }

  /** The zvol's name as the device itself reports it ({@code BLKZNAME}), whatever {@code zdN} it is now. */
  @Override
  public boolean holds(VolumeRef volume, Path device) {
    return ZfsErrorsToCsi.guard(() -> Zfs.isDeviceOf(device, local(volume).dataset()));
  }

  /**
   * A plain zvol's device node exists as long as the zvol does: nothing to undo. An encrypted zvol's
   * key is unloaded (the node engine has unmounted it before), which takes its device away; a key
   * not loaded is fine.
   */
  @Override
  public void detach(VolumeRef volume) {
    ZfsErrorsToCsi.run(() -> {
      VolumeId v;
      try {
        v = local(volume);
      } catch (CsiException notHere) {
        return; // not a zvol of this node: nothing here to undo
      }
      Optional<DatasetProperties> p = controller.managedVolume(v);
      if (p.isPresent() && p.get().keyStatus() == KeyStatus.AVAILABLE) {
        CrashPoints.reach("local.unstage.before-unload-key");
        zfs.unloadKey(v.dataset());
      }
    });
  }

  @Override
  public void refresh(VolumeRef volume) {
    ZfsErrorsToCsi.run(() -> {
      VolumeId v = local(volume);
      Optional<DatasetProperties> p = controller.managedVolume(v);
      if (p.isEmpty()) {
        return;
      }
      long size = p.get().volumeSize();
      Path device = zfs.zvolDevice(v.dataset(), config.deviceWait());
      long deadline = System.nanoTime() + REFRESH_WAIT.toNanos();
      while (BlockDevices.size(device) < size && System.nanoTime() < deadline) {
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    });
  }

  @Override
  public VolumeHealth health(VolumeRef volume) {
    VolumeId v;
    try {
      v = local(volume);
    } catch (CsiException e) {
      return VolumeHealth.abnormal(e.getMessage());
    }
    try {
      // The pool first: a pool that is not usable names itself, and its datasets are not read.
      VolumeHealth pool = controller.poolHealth(v.pool());
      if (pool.abnormal()) {
        return pool;
      }
      if (controller.managedVolume(v).isEmpty()) {
        return VolumeHealth.abnormal("zvol " + v.dataset() + " is missing");
      }
      return pool;
    } catch (CsiException e) {
      return VolumeHealth.abnormal(e.getMessage());
    } catch (StorageException e) {
      return VolumeHealth.abnormal("cannot read zvol " + v.dataset() + ": " + e.getMessage());
    }
  }
}

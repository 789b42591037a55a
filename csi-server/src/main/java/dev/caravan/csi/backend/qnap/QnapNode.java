package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.NodeBackend;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeRef;
import java.nio.file.Path;

/**
 * The qnap backend's node half, not built yet: attaching a LUN (iSCSI login on every portal, the
 * multipath map, the device by WWID) comes with host-storage's iscsi and multipath packages. Until
 * then NodeStage answers UNIMPLEMENTED with this reason, and nothing is ever attached, so detaching is
 * a no-op.
 */
final class QnapNode implements NodeBackend {
  static final String NOT_BUILT = "the qnap backend's node side (iSCSI login, multipath, device by WWID) is not"
      + " built yet: this plugin serves the qnap controller only";

  @Override
  public Path attach(VolumeRef volume) {
    throw new CsiException(CsiException.Kind.UNIMPLEMENTED, NOT_BUILT);
  }

  @Override
  public void detach(VolumeRef volume) {
    // nothing was attached by this node side
  }

  @Override
  public void refresh(VolumeRef volume) {
    throw new CsiException(CsiException.Kind.UNIMPLEMENTED, NOT_BUILT);
  }

  @Override
  public VolumeHealth health(VolumeRef volume) {
    return VolumeHealth.abnormal(NOT_BUILT);
  }
}

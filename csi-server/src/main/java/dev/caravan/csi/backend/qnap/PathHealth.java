package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.storage.block.ScsiDisk;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.multipath.MultipathMap;
import dev.caravan.storage.multipath.MultipathPath;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An attached LUN's condition as this node's multipath map shows it. Read from multipathd's path
 * states and from sysfs (the sessions and their disks), never by I/O to the device: while the target
 * is stalled that I/O queues for as long as {@code no_path_retry} allows, and the answer would come
 * too late to say so. Abnormal while fewer paths are up than the volume has portals, naming each path
 * that is not up (its disk, the portal of its session, multipathd's verdicts) and each portal without
 * a session, so that an operator sees which link or portal is dead.
 */
final class PathHealth {
  private PathHealth() {}

  static VolumeHealth of(LunContext lun, Initiator initiator) {
    Optional<MultipathMap> found = initiator.map(lun.wwid());
    if (found.isEmpty()) {
      return VolumeHealth.abnormal("no multipath map for WWID " + lun.wwid() + " on this node");
    }
    MultipathMap map = found.get();
    int up = map.upPaths().size();
    int all = lun.portals().size();
    if (up >= all) {
      return VolumeHealth.OK;
    }
    Map<String, String> portalOfDisk = new HashMap<>();
    List<String> sessionless = new ArrayList<>();
    for (String portal : lun.portals()) {
      Optional<IscsiSession> session = initiator.session(lun.target(), portal);
      if (session.isEmpty()) {
        sessionless.add(portal);
        continue;
      }
      for (ScsiDisk disk : initiator.disks(session.get())) {
        portalOfDisk.put(disk.name(), portal);
      }
    }
    StringBuilder message = new StringBuilder(up == 0
        ? "no path of multipath map " + map.name() + " is up"
        : up + " of " + all + " paths of multipath map " + map.name() + " are up");
    List<String> down = map.paths().stream().filter(p -> !p.isUp()).map(p -> describe(p, portalOfDisk)).toList();
    if (!down.isEmpty()) {
      message.append("; down: ").append(String.join(", ", down));
    }
    if (!sessionless.isEmpty()) {
      message.append("; no iSCSI session through ").append(String.join(", ", sessionless));
    }
    // multipathd's own view of every path, and each session's state by portal: the link or portal
    // to look at. While no path is up, I/O to the map queues (no_path_retry) and then fails.
    return VolumeHealth.ofStorage(message.toString(), "multipathd show paths; iscsiadm -m session -P 1  # is "
        + String.join(" / ", lun.portals()) + " reachable from this node?");
  }

  /** {@code /dev/sdc (3:0:0:0) through 127.0.0.1:3260: dm failed, checker faulty, device transport-offline}. */
  private static String describe(MultipathPath path, Map<String, String> portalOfDisk) {
    String portal = portalOfDisk.get(path.device().getFileName().toString());
    return path.device() + (path.address().isEmpty() ? "" : " (" + path.address() + ")")
        + (portal == null ? "" : " through " + portal) + ": dm " + path.state().name().toLowerCase(java.util.Locale.ROOT)
        + ", checker " + path.checkerState() + ", device " + path.deviceState();
  }
}

package dev.caravan.csi.backend.qnap;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.DeviceUse;
import dev.caravan.storage.block.ScsiDisk;
import dev.caravan.storage.block.ScsiDisks;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.iscsi.Chap;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.LoginOutcome;
import dev.caravan.storage.iscsi.Portal;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.multipath.MultipathMap;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The node's iSCSI initiator and multipath maps as {@link QnapNode} uses them: host-storage's
 * {@link Iscsi}, {@link Multipath} and {@link ScsiDisks}, with portals as the volume context spells
 * them ({@code host:port}).
 */
final class Initiator {

  private final Iscsi iscsi;
  private final Multipath multipath;

  Initiator(Iscsi iscsi, Multipath multipath) {
    this.iscsi = iscsi;
    this.multipath = multipath;
  }

  /**
   * The host's open-iscsi and multipathd, each iscsiadm run given {@code timeout}; logins, node
   * records and session look-ups through {@code iface} when given (else through iscsid's default
   * interface, seeing every session, as before interfaces were configurable).
   */
  static Initiator system(Duration timeout, Optional<String> iface) {
    Iscsi iscsi = Iscsi.system().withTimeout(timeout);
    return new Initiator(iface.map(iscsi::through).orElse(iscsi), Multipath.system());
  }

  /** The initiator name this node logs in with (its interface's, or the host's). */
  String initiatorName() {
    return iscsi.initiatorName();
  }

  LoginOutcome login(String target, String portal, Optional<Chap> chap) {
    return iscsi.login(target, Portal.parse(portal), chap);
  }

  Optional<IscsiSession> session(String target, String portal) {
    return iscsi.session(target, Portal.parse(portal));
  }

  boolean logout(String target, String portal) {
    return iscsi.logout(target, Portal.parse(portal));
  }

  boolean deleteNode(String target, String portal) {
    return iscsi.deleteNode(target, Portal.parse(portal));
  }

  /**
   * The session's disk at LUN {@code lun}, once the kernel has read its WWID. A session that existed
   * before the LUN was mapped has not seen it: its host is scanned when the disk is not there yet.
   */
  ScsiDisk awaitDisk(IscsiSession session, long lun, Duration timeout) {
    if (iscsi.disks(session).stream().noneMatch(d -> d.lun() == lun)) {
      iscsi.rescan(session);
    }
    return iscsi.awaitDisk(session, lun, timeout);
  }

  MultipathMap awaitMap(Wwid wwid, int paths, Duration timeout) {
    return multipath.awaitMap(wwid, paths, timeout);
  }

  Optional<MultipathMap> map(Wwid wwid) {
    return multipath.map(wwid);
  }

  boolean flush(Wwid wwid) {
    return multipath.flush(wwid);
  }

  boolean resize(Wwid wwid) {
    return multipath.resize(wwid);
  }

  /** The SCSI disks the session brought, read from sysfs. */
  List<ScsiDisk> disks(IscsiSession session) {
    return iscsi.disks(session);
  }

  List<ScsiDisk> disks(Wwid wwid) {
    return ScsiDisks.withWwid(wwid);
  }

  void rescan(ScsiDisk disk) {
    ScsiDisks.rescan(disk);
  }

  /**
   * The WWIDs of the session's other LUNs that are in use here: that have a multipath map (someone
   * attached them) or whose disk is held by something. Their session must stay.
   */
  List<Wwid> otherLunsInUse(IscsiSession session, Wwid self) {
    List<Wwid> used = new ArrayList<>();
    for (ScsiDisk disk : iscsi.disks(session)) {
      Optional<Wwid> w = disk.wwid();
      if (w.isEmpty() || w.get().equals(self)) {
        continue;
      }
      try {
        if (multipath.map(w.get()).isPresent()) {
          used.add(w.get());
        }
      } catch (StorageException e) {
        used.add(w.get()); // unknown counts as in use: a logout would cut it off
      }
    }
    return used;
  }
  /**
   * What on this host uses the LUN {@code wwid}, as {@link DeviceUse} defines use: its multipath map
   * or one of its SCSI disks mounted, bound at a target, held or opened exclusively. A disk held by
   * the LUN's own map is not used for that: the map is asked itself.
   */
  List<String> users(Wwid wwid) {
    List<String> users = new ArrayList<>();
    Optional<MultipathMap> map = multipath.map(wwid);
    Optional<String> mapName = map.map(m -> kernelName(m.device()));
    map.ifPresent(m -> DeviceUse.of(m.device()).users()
        .forEach(u -> users.add(mapName.get() + " (multipath map " + wwid + ") " + u)));
    for (ScsiDisk disk : ScsiDisks.withWwid(wwid)) {
      String ownMap = mapName.map(n -> "held by " + n).orElse("");
      DeviceUse.of(Path.of("/dev", disk.name())).users().stream().filter(u -> !u.equals(ownMap))
          .forEach(u -> users.add(disk.name() + " " + u));
    }
    return users;
  }

  private static String kernelName(Path device) {
    try {
      return device.toRealPath().getFileName().toString();
    } catch (IOException e) {
      throw new StorageException("cannot resolve " + device + ": " + e.getMessage());
    }
  }
}

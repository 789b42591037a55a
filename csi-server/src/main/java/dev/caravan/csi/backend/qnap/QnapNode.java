package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.CsiException.Kind;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.LuksMapping;
import dev.caravan.csi.backend.NodeBackend;
import dev.caravan.csi.backend.Passphrase;
import dev.caravan.csi.backend.RotationFrom;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.ScsiDisk;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.iscsi.IscsiLoginException;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.LoginOutcome;
import dev.caravan.storage.multipath.MapInUseException;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.multipath.MultipathMap;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The qnap backend's node half: makes a LUN's multipath device appear on this node and go again.
 *
 * <p>Attach logs in to the volume's target on every portal of its context (one reachable portal is
 * enough: the volume works degraded, and a warning names the others), with the CHAP credentials the
 * context's secret names pick out of the NodeStage secrets. The node record of every login is
 * {@code node.startup=manual}, has multipath's path timeouts ({@link
 * dev.caravan.storage.iscsi.PathTimeouts#MULTIPATH}) and holds the credentials in root's node
 * database, never on a command line ({@link dev.caravan.storage.iscsi.Iscsi#login}). No
 * SendTargets discovery runs first: the login creates the one node record it needs, where
 * discovery would add a record for every target the portal offers. The LUN is then known by its
 * WWID only ({@code 3} followed by the appliance's NAA id): each session's disk at the volume's LUN
 * number must carry it, or the attach is refused rather than risk another LUN's data. The device
 * returned is the multipath map of that WWID, once multipathd has built it over every logged-in
 * path. A failure after a login undoes what this call
 * did: the map is flushed and the sessions this call opened are logged out.
 *
 * <p>Detach flushes the map (refused while it is mounted or held), then logs out of the target on
 * every portal, unless another LUN of the same target still has a map here, and deletes the node
 * records (and so the credentials in them). Every step finds its state afresh, so a detach cut short
 * at any point is finished by the next one.
 *
 * <p>An encrypted volume ({@code encryption=on} in its context, {@code l} in its id) is LUKS2 on the
 * multipath map: attach formats the map as LUKS2 only when it holds no signature at all (the one
 * format step every device takes), then opens the mapping with the stage's passphrase and returns
 * the mapping; a stage whose secrets rotate the passphrase changes the LUKS2 header's key slots first,
 * as on the file backend ({@link LuksMapping#openRotatingOn}). The mapping is named from the LUN's WWID ({@link Luks2#mappingName}), which is the
 * same on every node and after every restart, so a retried stage, a restarted plugin and detach find
 * it. Detach closes the mapping before it flushes the map; refresh grows the mapping after the map.
 */
final class QnapNode implements NodeBackend {
  private static final System.Logger LOG = System.getLogger(QnapNode.class.getName());

  private final Initiator initiator;
  private final Duration deviceWait;
  private final List<dev.caravan.storage.iscsi.Portal> portals;
  private final KeySlotCost keySlotCost;

  /**
   * @param portals the node's own {@code qnap.portals}: the only portals it logs in to, whatever a
   *     volume context names (a context naming another host would make this node send its initiator
   *     name, and its CHAP secret, to that host, and write a workload's data there)
   */
  QnapNode(Initiator initiator, Duration deviceWait, List<String> portals, KeySlotCost keySlotCost) {
    this.initiator = initiator;
    this.deviceWait = deviceWait;
    this.portals = portals.stream().map(dev.caravan.storage.iscsi.Portal::parse).toList();
    this.keySlotCost = keySlotCost;
  }

  @Override
  public Path attach(VolumeRef volume) {
    if (!encrypted(volume)) {
      return attachMap(volume);
    }
    // The passphrases and dm-crypt are checked before any login: a missing or malformed one changes
    // nothing here.
    try (Passphrase key = Encryption.passphrase("NodeStageVolume", volume.secrets());
        RotationFrom previous = RotationFrom.of(volume.secrets())) {
      LuksMapping.requireCryptFor(volume);
      LuksMapping mapping = mapping(volume, LunContext.of(volume).wwid());
      Path map = attachMap(volume);
      mapping.formatOnceOn(map, key, keySlotCost);
      // LUKS2 written, no mapping yet: a retry finds the header and only opens it.
      CrashPoints.reach("qnap.attach.after-luks-format");
      try {
        // A rotation's new key slot added, the previous one's not yet destroyed: a retry opens with
        // the new passphrase and destroys it then.
        return mapping.openRotatingOn(map, key, previous.passphrase(), keySlotCost,
            () -> CrashPoints.reach("qnap.attach.after-luks-add-slot"));
      } catch (StorageException e) {
        throw translate(volume.volumeId(), "open the LUKS2 mapping", e);
      }
    }
  }

  /**
   * Whether the volume is encrypted: its id says so (the LUN's name, on the appliance), or its context
   * does; either is enough, so that a context that lost the key never has a plain filesystem written on
   * an encrypted LUN.
   */
  private static boolean encrypted(VolumeRef volume) {
    return QnapIds.volume(volume.volumeId()).map(QnapIds.VolumeId::encrypted).orElse(false)
        || Encryption.Mode.ON.value().equals(volume.context().get(Encryption.PARAMETER));
  }

  /**
   * The LUN's LUKS2 mapping, named from its WWID: the same on every node and after a restart, whatever
   * the map's name.
   */
  private static LuksMapping mapping(VolumeRef volume, Wwid wwid) {
    return new LuksMapping(volume, Luks2.mappingName("caravan-qnap:" + wwid.value()));
  }

  /** Whether {@code device} is a caravan LUKS2 mapping, not a multipath map (both live in /dev/mapper). */
  private static boolean isLuksMapping(Path device) {
    return LuksMapping.isMapperDevice(device) && device.getFileName().toString().startsWith("caravan-");
  }

  private Path attachMap(VolumeRef volume) {
    LunContext lun = LunContext.of(volume);
    for (String p : lun.portals()) {
      if (!portals.contains(dev.caravan.storage.iscsi.Portal.parse(p))) {
        throw CsiException.invalid("volume_context." + LunContext.PORTALS + " entry '" + p + "' is not one of this"
            + " node's qnap.portals " + portals + ": a node logs in only to the portals of the appliance it is"
            + " configured for");
      }
    }
    Optional<dev.caravan.storage.iscsi.Chap> chap = lun.chap(volume.secrets());
    List<String> loggedIn = new ArrayList<>();
    try {
      List<IscsiSession> sessions = new ArrayList<>();
      List<String> failed = new ArrayList<>();
      List<IscsiLoginException> errors = new ArrayList<>();
      for (String portal : lun.portals()) {
        try {
          if (initiator.login(lun.target(), portal, chap) == LoginOutcome.LOGGED_IN) {
            loggedIn.add(portal);
          }
          initiator.session(lun.target(), portal).ifPresent(sessions::add);
        } catch (IscsiLoginException e) {
          failed.add(portal);
          errors.add(e);
          forget(lun, portal);
        }
      }
      if (sessions.isEmpty()) {
        throw noPath(volume.volumeId(), lun, errors);
      }
      if (!failed.isEmpty()) {
        LOG.log(System.Logger.Level.WARNING, "volume {0}: attached degraded, no session through portal(s) {1}: {2}",
            volume.volumeId(), failed, errors.stream().map(Throwable::getMessage).toList());
      }
      // Sessions exist, no map yet: a retry finds the sessions logged in and must still await the map.
      CrashPoints.reach("qnap.attach.after-login");
      for (IscsiSession session : sessions) {
        ScsiDisk disk = initiator.awaitDisk(session, lun.number(), deviceWait);
        if (!disk.wwid().equals(Optional.of(lun.wwid()))) {
          throw CsiException.failedPrecondition("LUN " + lun.number() + " of " + lun.target() + " at "
              + session.portal() + " has WWID " + disk.wwid().map(Wwid::value).orElse("(none)") + ", but volume "
              + volume.volumeId() + "'s context says " + lun.wwid() + " (naa): refusing a device whose identity"
              + " does not match");
        }
      }
      return initiator.awaitMap(lun.wwid(), sessions.size(), deviceWait).device();
    } catch (RuntimeException e) {
      rollBack(volume.volumeId(), lun, loggedIn);
      throw translate(volume.volumeId(), "attach", e);
    }
  }

  /**
   * The map's WWID as the kernel names the map at {@code device}: the LUN's, or another LUN's blocks.
   * A LUKS2 mapping holds the volume when it is this LUN's mapping and open on this LUN's map.
   */
  @Override
  public boolean holds(VolumeRef volume, Path device) {
    Wwid wwid = LunContext.of(volume).wwid();
    if (!isLuksMapping(device)) {
      return Multipath.wwidOf(device).equals(Optional.of(wwid));
    }
    LuksMapping mapping = mapping(volume, wwid);
    return mapping.isAt(device) && mapping.isOpenOn(d -> Multipath.wwidOf(d).equals(Optional.of(wwid)));
  }

  private void rollBack(String volumeId, LunContext lun, List<String> loggedIn) {
    if (loggedIn.isEmpty()) {
      return; // sessions that were there before this call belong to whoever made them
    }
    try {
      initiator.flush(lun.wwid());
      for (String portal : loggedIn) {
        initiator.logout(lun.target(), portal);
        initiator.deleteNode(lun.target(), portal);
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "volume {0}: rolling back a failed attach left sessions to {1}: {2}",
          volumeId, lun.target(), e.getMessage());
    }
  }

  /** Deletes the node record of a portal that has no session (a refused login's, CHAP included). */
  private void forget(LunContext lun, String portal) {
    try {
      if (initiator.session(lun.target(), portal).isEmpty()) {
        initiator.deleteNode(lun.target(), portal);
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "cannot delete the node record of {0} at {1}: {2}", lun.target(), portal,
          e.getMessage());
    }
  }

  private static CsiException noPath(String volumeId, LunContext lun, List<IscsiLoginException> errors) {
    boolean refused = !errors.isEmpty() && errors.stream().allMatch(e ->
        e.reason() == IscsiLoginException.Reason.AUTHENTICATION_FAILED
            || e.reason() == IscsiLoginException.Reason.REFUSED);
    String words = errors.stream().map(Throwable::getMessage).toList().toString();
    if (refused) {
      return CsiException.failedPrecondition("volume " + volumeId + ": every portal refused this node's login to "
          + lun.target() + " (is the volume ControllerPublished to this node, whose id must be its initiator"
          + " name, and are the CHAP secrets right?): " + words);
    }
    return new CsiException(Kind.UNAVAILABLE, "volume " + volumeId + ": no portal of " + lun.portals()
        + " let this node log in to " + lun.target() + ": " + words);
  }

  /**
   * The device of the volume's LUN on this host, if there is one, what the inspector compares with the
   * journal's: the multipath map, or an encrypted volume's LUKS2 mapping while it is open on the map.
   *
   * @throws CsiException UNAVAILABLE when multipathd does not answer for a map that exists
   */
  Optional<java.nio.file.Path> attachedDevice(VolumeRef volume) {
    try {
      Optional<LunContext> lun = LunContext.lenient(volume);
      Optional<Path> map = lun.flatMap(l -> initiator.map(l.wwid())).map(MultipathMap::device);
      if (map.isEmpty() || !encrypted(volume)) {
        return map;
      }
      // An encrypted volume's device is its LUKS2 mapping while that is open on the LUN's map: the
      // device the journal records and the filesystem is mounted from.
      Wwid wwid = lun.get().wwid();
      LuksMapping mapping = mapping(volume, wwid);
      return mapping.isOpenOn(d -> Multipath.wwidOf(d).equals(Optional.of(wwid))) ? Optional.of(mapping.path()) : map;
    } catch (StorageException e) {
      throw new CsiException(Kind.UNAVAILABLE, "volume " + volume.volumeId() + ": cannot read its multipath map: "
          + e.getMessage());
    }
  }

  /**
   * Whether the volume is encrypted and, if it is, its LUKS2 mapping as the inspector shows it: name,
   * whether it is open and over which device; never anything of its key.
   */
  Map<String, String> encryptionEvidence(VolumeRef volume) {
    Map<String, String> evidence = new LinkedHashMap<>();
    evidence.put("encrypted", encrypted(volume) ? "yes" : "no");
    if (encrypted(volume)) {
      LunContext.lenient(volume).ifPresent(lun -> evidence.putAll(mapping(volume, lun.wwid()).evidence()));
    }
    return evidence;
  }

  @Override
  public void detach(VolumeRef volume) {
    Optional<LunContext> parsed = LunContext.lenient(volume);
    if (parsed.isEmpty()) {
      return; // a context without target, LUN or portals never let an attach log in anywhere
    }
    LunContext lun = parsed.get();
    try {
      if (mapping(volume, lun.wwid()).closeIfOpen()) {
        // The mapping is closed, the map and sessions are not: a retry flushes and logs out.
        CrashPoints.reach("qnap.detach.after-luks-close");
      }
      initiator.flush(lun.wwid());
      // The map is gone, the sessions and node records are not: a retry must log out still.
      CrashPoints.reach("qnap.detach.after-flush");
      for (String portal : lun.portals()) {
        Optional<IscsiSession> session = initiator.session(lun.target(), portal);
        if (session.isPresent()) {
          List<Wwid> others = initiator.otherLunsInUse(session.get(), lun.wwid());
          if (!others.isEmpty()) {
            LOG.log(System.Logger.Level.INFO, "volume {0}: staying logged in to {1} at {2}: LUN(s) {3} of that"
                + " target are in use on this node", volume.volumeId(), lun.target(), portal, others);
            continue;
          }
          initiator.logout(lun.target(), portal);
        }
        initiator.deleteNode(lun.target(), portal);
      }
    } catch (RuntimeException e) {
      throw translate(volume.volumeId(), "detach", e);
    }
  }

  @Override
  public List<String> usersHere(VolumeRef volume) {
    Optional<LunContext> lun = LunContext.lenient(volume);
    if (lun.isEmpty()) {
      return List.of(); // a context without target, LUN or portals never let an attach log in anywhere
    }
    try {
      return initiator.users(lun.get().wwid());
    } catch (StorageException e) {
      throw new CsiException(Kind.UNAVAILABLE, "volume " + volume.volumeId() + ": cannot tell what uses its device"
          + " on this node, so it counts as in use: " + e.getMessage());
    }
  }

  @Override
  public void refresh(VolumeRef volume) {
    refresh(volume, "NodeExpandVolume");
  }

  /** Right after attach: the same steps, and a key asked for in the stage's own secrets. */
  @Override
  public void refresh(VolumeRef volume, Path device) {
    refresh(volume, "NodeStageVolume");
  }

  private void refresh(VolumeRef volume, String rpc) {
    LunContext lun = LunContext.of(volume);
    try {
      for (ScsiDisk disk : initiator.disks(lun.wwid())) {
        initiator.rescan(disk);
      }
      initiator.resize(lun.wwid());
      mapping(volume, lun.wwid()).growToItsDevice(rpc);
    } catch (RuntimeException e) {
      throw translate(volume.volumeId(), "refresh", e);
    }
  }

  /** As {@link #health(VolumeRef)}; an encrypted volume's recorded mapping must also still be open on the map. */
  @Override
  public VolumeHealth health(VolumeRef volume, Optional<Path> device) {
    VolumeHealth paths = health(volume);
    if (paths.abnormal() || device.isEmpty() || !isLuksMapping(device.get())) {
      return paths;
    }
    return holds(volume, device.get()) ? paths
        : VolumeHealth.abnormal("the LUKS2 mapping " + device.get() + " is not open on the LUN's multipath map");
  }

  @Override
  public VolumeHealth health(VolumeRef volume) {
    Optional<LunContext> lun = LunContext.lenient(volume);
    if (lun.isEmpty()) {
      return VolumeHealth.abnormal("the volume context lacks what the qnap node needs (targetIqn, lun, portals, naa)");
    }
    try {
      return PathHealth.of(lun.get(), initiator);
    } catch (StorageException e) {
      return VolumeHealth.abnormal("cannot read the multipath map or the iSCSI sessions: " + e.getMessage());
    }
  }

  private static RuntimeException translate(String volumeId, String step, RuntimeException e) {
    return switch (e) {
      case CsiException c -> c;
      case MapInUseException m -> CsiException.failedPrecondition("volume " + volumeId + ": multipath map of WWID "
          + m.wwid() + " is in use (" + String.join(", ", m.users()) + "); unmount it first");
      case StorageException s -> new CsiException(Kind.UNAVAILABLE, "volume " + volumeId + ": " + step + " failed: "
          + s.getMessage(), s);
      default -> e;
    };
  }
}

package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CapacityReport;
import dev.caravan.csi.backend.ContentSource;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.CsiException.Kind;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.ExpandResult;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdScheme;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.Provisioned;
import dev.caravan.csi.backend.SnapshotInfo;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.VolumeStatus;
import dev.caravan.csi.backend.qnap.QnapApi.Chap;
import dev.caravan.csi.backend.qnap.QnapApi.Lun;
import dev.caravan.csi.backend.qnap.QnapApi.LunState;
import dev.caravan.csi.backend.qnap.QnapApi.Mapping;
import dev.caravan.csi.backend.qnap.QnapApi.Pool;
import dev.caravan.csi.backend.qnap.QnapApi.Snap;
import dev.caravan.csi.backend.qnap.QnapApi.Target;
import dev.caravan.csi.backend.qnap.QnapIds.SnapshotId;
import dev.caravan.csi.backend.qnap.QnapIds.VolumeId;
import dev.caravan.csi.support.CrashPoints;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The qnap backend's controller: one LUN and one target (named alike, the alias marking it Caravan's)
 * per volume, sizes in whole GiB, and ControllerPublish as the fence: the target's ACL admits exactly
 * the initiator of the node the volume is published to, and a second node's publish is refused while
 * the first holds it.
 *
 * <p>The ACL fences only while the target's Default Policy (its ACL row 0) denies every initiator the
 * ACL does not list; QNAP's factory default admits them all. Every target Caravan makes is set to
 * deny when it is made (and again by a CreateVolume retry that finds it otherwise), and every publish
 * first reads the policy back: a target that admits unlisted initiators, or whose answer does not
 * prove that it denies them, is refused with FAILED_PRECONDITION naming the setting. Caravan never
 * changes a policy it finds opened on a published volume's target: that is the operator's to decide.
 *
 * <p>A dead node's volume is recovered with {@code nomad volume detach}, which makes Nomad call
 * ControllerUnpublish for that node: its initiator leaves the ACL, and the next node's publish
 * succeeds. Nothing here ever removes a node from an ACL on its own.
 *
 * <p>Volume context: {@code targetIqn}, {@code lun} (the per-target LUN number), {@code portals}
 * (comma-separated host:port, from {@code qnap.portals}), {@code naa} (the LUN's NAA id as the
 * appliance reports it), {@code fsType}, and, with CHAP configured, {@code chapUserSecret} and
 * {@code chapPasswordSecret} (and the mutual pair): the names of the secrets the node reads, never
 * their values; {@code encryption=on} for an encrypted volume.
 *
 * <p>Encryption ({@code encryption=on}) is LUKS2 on the LUN, which the node writes at the volume's
 * first stage and opens with the stage's passphrase: the appliance only ever holds ciphertext. The
 * volume id records it ({@link QnapIds}), so it lives on the appliance in the LUN's name. An
 * encrypted LUN is the smallest whole number of GiB that holds the size asked for and the 16 MiB LUKS2
 * header, and its capacity, what every call reports, is what the opened mapping holds: the LUN less
 * the header.
 */
final class QnapController implements ControllerBackend {
  static final String POOL = "pool";
  static final String THIN = "thin";
  static final String FS_TYPE = "fsType";
  static final Set<String> PARAMETERS = Set.of(POOL, THIN, FS_TYPE, Encryption.PARAMETER);
  static final long GIB = 1L << 30;
  /** The appliance is shared: any node's plugin serves any id. */
  private static final IdScheme IDS = IdScheme.unowned(QnapIds::volumeShape, QnapIds::snapshotShape,
      QnapIds::volumeLockKey, QnapIds::snapshotLockKey);

  private final QnapApi api;
  private final QnapConfig config;
  private final NodeUsage usage;

  QnapController(QnapApi api, QnapConfig config, NodeUsage usage) {
    this.api = api;
    this.config = config;
    this.usage = usage;
  }

  @Override
  public Set<String> knownParameters() {
    return PARAMETERS;
  }

  @Override
  public IdScheme ids() {
    return IDS;
  }

  /**
   * Always available here: the controller only names the LUN; LUKS2 is written and opened by the node,
   * which refuses NodeStageVolume (FAILED_PRECONDITION, saying why) where it has no dm-crypt.
   */
  @Override
  public Optional<String> encryptionUnavailable() {
    return Optional.empty();
  }

  /** What an encrypted volume's LUN holds beyond its capacity: the LUKS2 header. */
  private static long header(VolumeId v) {
    return v.encrypted() ? dev.caravan.storage.crypt.Luks2.HEADER_BYTES : 0;
  }

  /** The volume's capacity: its LUN's size, less an encrypted volume's LUKS2 header (what its mapping holds). */
  private static long capacity(VolumeId v, Lun lun) {
    return Math.max(0, lun.capacityBytes() - header(v));
  }

  /**
   * The LUN, in whole GiB, of a volume that must hold {@code bytes}: an encrypted one's header on top;
   * OUT_OF_RANGE when the capacity that gives is above {@code range}'s limit.
   */
  private static long lunGib(VolumeId v, long bytes, CapacityRange range) {
    long gib = (bytes + header(v) + GIB - 1) / GIB;
    long capacity = gib * GIB - header(v);
    if (range.hasLimit() && capacity > range.limitBytes()) {
      throw CsiException.outOfRange("capacity_range.limit_bytes " + range.limitBytes() + " is below " + capacity
          + " bytes, the smallest encrypted volume possible here (a LUN of whole GiB less its 16 MiB LUKS2 header)");
    }
    return gib;
  }

  // ---- lookups -----------------------------------------------------------------------------------

  /** The LUN of Caravan's with this name that is not being removed. */
  private Optional<Lun> lunNamed(List<Lun> luns, String name) {
    return luns.stream().filter(l -> l.name().equals(name) && l.state() != LunState.GHOST).findFirst();
  }

  private Optional<Target> targetNamed(List<Target> targets, String name) {
    return targets.stream().filter(t -> t.name().equals(name) && t.alias().equals(name)).findFirst();
  }

  private static VolumeId parse(String volumeId) {
    return QnapIds.volume(volumeId).orElseThrow(() -> CsiException.notFound(
        "volume_id '" + IdRules.printable(volumeId) + "' does not exist (" + QnapIds.VOLUME_RULE + ")"));
  }

  private VolumeInfo info(VolumeId v, Lun lun, Target target, int lunNumber, Optional<ContentSource> source) {
    Map<String, String> context = new LinkedHashMap<>();
    context.put("targetIqn", target.iqn());
    context.put("lun", Integer.toString(lunNumber));
    context.put("portals", String.join(",", config.portals()));
    context.put("naa", lun.naa());
    context.put(FS_TYPE, v.fsType());
    context.put(AccessType.CONTEXT_KEY, AccessType.contextValue(v.access()));
    if (v.encrypted()) {
      context.put(Encryption.PARAMETER, Encryption.Mode.ON.value());
    }
    config.chap().ifPresent(c -> {
      context.put("chapUserSecret", c.user());
      context.put("chapPasswordSecret", c.password());
      c.mutualUser().ifPresent(u -> context.put("mutualChapUserSecret", u));
      c.mutualPassword().ifPresent(p -> context.put("mutualChapPasswordSecret", p));
    });
    return new VolumeInfo(v.id(), v.lunName(), capacity(v, lun), v.fsType(), context, source, List.of());
  }

  // ---- create --------------------------------------------------------------------------------------

  @Override
  public Provisioned provisionVolume(VolumeRequest req) {
    String fs = fsType(req);
    int pool = pool(req.parameters());
    boolean thin = thin(req.parameters());
    VolumeId v = QnapIds.volumeFor(req.name(), fs, req.accessTypes(), req.encrypted());
    List<Lun> luns = api.luns();
    // A LUN another controller is removing (it lost a race for this name) comes after one that stays.
    Optional<Lun> same = luns.stream().filter(l -> l.state() != LunState.GHOST)
        .filter(l -> QnapIds.lun(l.name()).map(x -> x.hash().equals(v.hash())).orElse(false))
        .min(Comparator.comparing(l -> l.state() == LunState.REMOVING));
    Lun lun;
    VolumeId chosen = v;
    boolean made = false;
    if (same.isPresent()) {
      lun = same.get();
      VolumeId existing = QnapIds.lun(lun.name()).orElseThrow();
      if (lun.state() == LunState.REMOVING) {
        throw new CsiException(Kind.UNAVAILABLE, "volume '" + req.name() + "' (LUN " + lun.name()
            + ") is still being removed by the appliance; retry when it is gone");
      }
      String problem = !existing.fsType().equals(fs) ? "was created for " + existing.fsType() + ", not " + fs
          : !existing.access().containsAll(req.accessTypes()) ? "was created for "
              + AccessType.contextValue(existing.access()) + " access, not " + AccessType.contextValue(req.accessTypes())
          : existing.encrypted() != v.encrypted() ? "has parameters." + Encryption.PARAMETER + "="
              + (existing.encrypted() ? "on" : "off") + ", not " + (v.encrypted() ? "on" : "off")
          : !req.capacity().admits(capacity(existing, lun)) ? "has " + capacity(existing, lun)
              + " bytes, outside the requested range"
          : lun.thin() != thin ? "is " + (lun.thin() ? "thin" : "thick") + ", not " + (thin ? "thin" : "thick")
          : lun.poolId() != pool ? "is in pool " + lun.poolId() + ", not " + pool : "";
      if (!problem.isEmpty()) {
        throw CsiException.alreadyExists("volume '" + req.name() + "' exists and " + problem);
      }
      if (lun.state() == LunState.CREATING) {
        lun = api.awaitReady(lun);
      }
      chosen = existing; // what it was created for stays what it reports
    } else if (req.source().isPresent()) {
      lun = cloneInto(v, req, pool);
      made = true;
    } else {
      long gib = lunGib(v, size(req.capacity(), 0), req.capacity());
      requireRoom(pool, thin, gib * GIB);
      lun = api.createLun(v.lunName(), gib, pool, thin);
      made = true;
      CrashPoints.reach("qnap.create.after-lun"); // a LUN without its target: the retry, or a publish, exposes it
    }
    return settle(chosen, lun, made, expose(chosen, lun, req.source(), true), req.source());
  }

  /**
   * Settles a race for one name between controllers (two plugin instances, or a retry beside the
   * first call): the appliance, which refuses no LUN name twice (S3), is still the arbiter, because it
   * numbers the LUNs mapped to one target itself, one at a time. The volume is the LUN of this name
   * mapped to the volume's target at the lowest LUN number; that mapping is the first one made and no
   * caller ever removes it. A LUN this call made that lost is unmapped and deleted (nobody was given
   * it: a CreateVolume returns the winner), and the winner is returned as found, not made.
   */
  private Provisioned settle(VolumeId v, Lun mine, boolean made, VolumeInfo exposed, Optional<ContentSource> source) {
    Optional<Target> target = targetNamed(api.targets(), v.lunName());
    if (target.isEmpty()) {
      throw new CsiException(Kind.ABORTED, "QNAP target '" + v.lunName() + "' vanished while the volume was being"
          + " created (another controller removing it?); retry");
    }
    int t = target.get().index();
    Optional<Lun> winner = api.luns().stream().filter(l -> l.name().equals(v.lunName()) && l.present())
        .filter(l -> numberOn(l, t).isPresent()).min(Comparator.comparing(l -> numberOn(l, t).orElseThrow()));
    if (winner.isEmpty() || winner.get().index() == mine.index()) {
      return new Provisioned(exposed, made);
    }
    if (made) {
      api.unmap(mine, target.get());
      api.deleteLun(mine);
    }
    Lun w = winner.get().state() == LunState.CREATING ? api.awaitReady(winner.get()) : winner.get();
    return new Provisioned(info(v, w, target.get(), numberOn(w, t).orElseThrow(), source), false);
  }

  private static Optional<Integer> numberOn(Lun lun, int targetIndex) {
    return lun.mappings().stream().filter(m -> m.targetIndex() == targetIndex).map(Mapping::lunNumber).findFirst();
  }

  /**
   * Makes sure the volume's own target exists, denies unlisted initiators if this call made it (or,
   * with {@code creating}, whatever made it), and maps its LUN; returns the volume as exposed.
   */
  private VolumeInfo expose(VolumeId v, Lun lun, Optional<ContentSource> source, boolean creating) {
    List<Target> targets = api.targets();
    Target target = targetNamed(targets, v.lunName()).orElse(null);
    if (target == null) {
      if (targets.stream().anyMatch(t -> t.name().equals(v.lunName()))) {
        throw CsiException.failedPrecondition("QNAP target '" + v.lunName() + "' exists but its alias is not '"
            + v.lunName() + "': it is not Caravan's; rename or remove it on the appliance");
      }
      target = createTarget(v.lunName());
      CrashPoints.reach("qnap.create.after-target"); // the target exists, admitting everyone: the retry denies
      api.denyByDefault(target);
    } else if (creating && !api.defaultPolicy(target).denies()) {
      api.denyByDefault(target);
    }
    int index = target.index();
    Optional<Mapping> mapping = lun.mappings().stream().filter(m -> m.targetIndex() == index).findFirst();
    int lunNumber = mapping.isPresent() ? mapping.get().lunNumber() : api.map(lun, target);
    return info(v, lun, target, lunNumber, source);
  }

  /**
   * Creates the volume's target; when the appliance refuses because another controller made it a
   * moment ago, that one is the volume's target.
   */
  private Target createTarget(String name) {
    try {
      return api.createTarget(name);
    } catch (CsiException e) {
      return targetNamed(api.targets(), name).orElseThrow(() -> e);
    }
  }

  private Lun cloneInto(VolumeId v, VolumeRequest req, int pool) {
    ContentSource src = req.source().orElseThrow();
    List<Lun> luns = api.luns();
    if (src.kind() == ContentSource.Kind.SNAPSHOT) {
      SnapshotId s = QnapIds.snapshot(src.id()).orElseThrow(() -> CsiException.notFound(
          "volume_content_source.snapshot.snapshot_id '" + src.id() + "' does not exist"));
      Lun source = lunNamed(luns, s.volume().lunName()).orElseThrow(() -> CsiException.notFound(
          "volume_content_source.snapshot.snapshot_id '" + src.id() + "' does not exist (its volume is gone)"));
      Snap snap = api.snapshots(source).stream().filter(x -> x.name().equals(s.snapName())).findFirst()
          .orElseThrow(() -> CsiException.notFound("volume_content_source.snapshot.snapshot_id '" + src.id()
              + "' does not exist"));
      requireEncryptionOfSource("volume_content_source.snapshot.snapshot_id", src.id(), s.volume(), v);
      long bytes = lunGib(v, size(req.capacity(), capacity(s.volume(), source)), req.capacity()) * GIB;
      return grow(api.cloneSnapshot(source, snap, v.lunName(), pool, config.instantClone()), bytes);
    }
    VolumeId sv = QnapIds.volume(src.id()).orElseThrow(() -> CsiException.notFound(
        "volume_content_source.volume.volume_id '" + src.id() + "' does not exist"));
    Lun source = lunNamed(luns, sv.lunName()).filter(Lun::present).orElseThrow(() -> CsiException.notFound(
        "volume_content_source.volume.volume_id '" + src.id() + "' does not exist"));
    requireEncryptionOfSource("volume_content_source.volume.volume_id", src.id(), sv, v);
    long bytes = lunGib(v, size(req.capacity(), capacity(sv, source)), req.capacity()) * GIB;
    // QTS has no LUN-to-LUN clone: copy a snapshot taken for this clone, then drop it. Its name comes
    // from the clone, so a retry after a crash finds and reuses it.
    String tempName = QnapIds.cloneSnapshotName(v);
    Snap temp = api.snapshots(source).stream().filter(x -> x.name().equals(tempName)).findFirst()
        .orElseGet(() -> api.createSnapshot(source, tempName));
    Lun clone = api.cloneSnapshot(source, temp, v.lunName(), pool, false);
    api.deleteSnapshot(source, temp);
    return grow(clone, bytes);
  }

  /**
   * A copy holds its source's blocks as they are, LUKS2 header included: it is encrypted exactly when
   * its source is, under the source's passphrase. A request that asks otherwise cannot be honoured
   * (INVALID_ARGUMENT: the source does not fit the parameters), and nothing is made.
   */
  private static void requireEncryptionOfSource(String field, String sourceId, VolumeId source, VolumeId copy) {
    if (source.encrypted() && !copy.encrypted()) {
      throw CsiException.invalid(field + " " + sourceId + " is encrypted, and a copy of it is encrypted with the same"
          + " passphrase: ask for parameters." + Encryption.PARAMETER + "=on with secrets." + Encryption.SECRET);
    }
    if (!source.encrypted() && copy.encrypted()) {
      throw CsiException.invalid(field + " " + sourceId + " is not encrypted, and a copy holds its blocks as they"
          + " are: parameters." + Encryption.PARAMETER + "=on cannot be honoured for it");
    }
  }

  private Lun grow(Lun lun, long bytes) {
    return lun.capacityBytes() >= bytes ? lun : api.resizeLun(lun, bytes / GIB);
  }

  /**
   * The size a new volume gets: whole GiB only. A required size that is not a whole number of GiB is
   * refused, never rounded; without one, the source's size or 1 GiB.
   */
  static long size(CapacityRange range, long sourceBytes) {
    if (range.hasRequired() && range.requiredBytes() % GIB != 0) {
      throw CsiException.invalid("capacity_range.required_bytes " + range.requiredBytes() + " is not a whole number"
          + " of GiB (1073741824 bytes): QNAP LUNs are sized in whole GiB, and Caravan does not round silently");
    }
    long bytes = range.hasRequired() ? range.requiredBytes() : Math.max(sourceBytes, GIB);
    bytes = Math.max(bytes, sourceBytes);
    if (range.hasLimit() && bytes > range.limitBytes()) {
      throw CsiException.outOfRange("capacity_range.limit_bytes " + range.limitBytes() + " is below " + bytes
          + " bytes, the smallest volume possible here (whole GiB, at least the source's size)");
    }
    if (bytes / GIB > (1L << 20)) {
      throw CsiException.outOfRange("capacity_range asks for " + bytes + " bytes; QNAP LUNs hold at most 1 PiB");
    }
    return bytes;
  }

  private void requireRoom(int poolId, boolean thin, long bytes) {
    Pool p = api.pool(poolId);
    if (!p.ready()) {
      throw new CsiException(Kind.UNAVAILABLE, "QNAP pool " + poolId + " is not ready (busy or in error)");
    }
    long room = thin ? p.capacityBytes() : p.maxThickBytes();
    if (bytes > room) {
      throw new CsiException(Kind.RESOURCE_EXHAUSTED, "QNAP pool " + poolId + " has room for " + room + " bytes of a "
          + (thin ? "thin" : "thick") + " LUN; " + bytes + " were asked for");
    }
  }

  private String fsType(VolumeRequest req) {
    String param = req.parameters().get(FS_TYPE);
    if (param != null && req.fsType().isPresent() && !param.equals(req.fsType().get())) {
      throw CsiException.invalid("parameters.fsType " + IdRules.printable(param) + " contradicts the capability's"
          + " fs_type " + req.fsType().get());
    }
    String fs = req.fsType().orElse(param == null ? "ext4" : param);
    if (!fs.equals("ext4") && !fs.equals("xfs")) {
      throw CsiException.invalid("fsType '" + IdRules.printable(fs) + "' is not supported: ext4 or xfs");
    }
    return fs;
  }

  private int pool(Map<String, String> parameters) {
    String p = parameters.get(POOL);
    if (p == null) {
      return config.defaultPool();
    }
    if (!p.matches("[0-9]{1,9}")) {
      throw CsiException.invalid("parameters.pool '" + IdRules.printable(p) + "' must be a QNAP pool id (a number)");
    }
    return Integer.parseInt(p);
  }

  private static boolean thin(Map<String, String> parameters) {
    return switch (parameters.getOrDefault(THIN, "true")) {
      case "true" -> true;
      case "false" -> false;
      default -> throw CsiException.invalid("parameters.thin '" + IdRules.printable(parameters.get(THIN))
          + "' must be true or false");
    };
  }

  // ---- delete ------------------------------------------------------------------------------------

  @Override
  public void deleteVolume(String volumeId) {
    VolumeId v = parse(volumeId);
    usage.of(volumeId).ifPresent(u -> {
      throw CsiException.failedPrecondition("volume_id " + volumeId + " is in use on this node: " + u.describe());
    });
    List<Lun> luns = api.luns();
    Optional<Lun> lun = luns.stream().filter(l -> l.name().equals(v.lunName()) && l.state() != LunState.GHOST)
        .findFirst();
    Optional<Target> target = targetNamed(api.targets(), v.lunName());
    if (lun.isPresent() && lun.get().state() != LunState.REMOVING) {
      List<String> snaps = api.snapshots(lun.get()).stream()
          .map(s -> QnapIds.SNAP_NAME.matcher(s.name()).matches() ? v.id() + "@" + s.name() : "'" + s.name() + "'")
          .toList();
      if (!snaps.isEmpty()) {
        throw CsiException.failedPrecondition("volume " + volumeId + " has snapshots " + snaps
            + "; delete them first (a volume is deleted only without snapshots)");
      }
      if (target.isPresent()) {
        List<String> holders = api.acl(target.get());
        if (!holders.isEmpty()) {
          throw CsiException.failedPrecondition("volume " + volumeId + " is still published to " + holders
              + "; ControllerUnpublish it first");
        }
        api.unmap(lun.get(), target.get());
        CrashPoints.reach("qnap.delete.after-unmap");
      }
    }
    lun.ifPresent(api::deleteLun);
    CrashPoints.reach("qnap.delete.after-lun"); // the target outlives its LUN until the retry
    target.ifPresent(api::deleteTarget);
  }

  // ---- reads -------------------------------------------------------------------------------------

  @Override
  public Optional<VolumeInfo> findVolume(String volumeId) {
    return volumeStatus(volumeId).map(VolumeStatus::volume);
  }

  @Override
  public Optional<VolumeStatus> volumeStatus(String volumeId) {
    Optional<VolumeId> v = QnapIds.volume(volumeId);
    if (v.isEmpty()) {
      return Optional.empty();
    }
    Optional<Lun> lun = lunNamed(api.luns(), v.get().lunName()).filter(Lun::present);
    if (lun.isEmpty()) {
      return Optional.empty();
    }
    Optional<Target> target = targetNamed(api.targets(), v.get().lunName());
    return Optional.of(status(v.get(), lun.get(), target));
  }

  private VolumeStatus status(VolumeId v, Lun lun, Optional<Target> target) {
    if (target.isEmpty()) {
      Target none = new Target(-1, v.lunName(), "", v.lunName(), List.of());
      return new VolumeStatus(info(v, lun, none, 0, Optional.empty()),
          VolumeHealth.abnormal("the volume's target is missing on the appliance (ControllerPublish recreates it)"),
          List.of());
    }
    Optional<Mapping> mapping = lun.mappings().stream().filter(m -> m.targetIndex() == target.get().index()).findFirst();
    VolumeInfo info = info(v, lun, target.get(), mapping.map(Mapping::lunNumber).orElse(0), Optional.empty());
    VolumeHealth health = lun.state() != LunState.READY ? VolumeHealth.abnormal("the LUN is not ready on the appliance")
        : mapping.isEmpty() ? VolumeHealth.abnormal("the LUN is not mapped to its target (ControllerPublish maps it)")
        : VolumeHealth.OK;
    return new VolumeStatus(info, health, api.acl(target.get()));
  }

  @Override
  public List<VolumeInfo> listVolumes() {
    List<Target> targets = api.targets();
    List<VolumeInfo> out = new ArrayList<>();
    for (Lun lun : api.luns()) {
      Optional<VolumeId> v = QnapIds.lun(lun.name());
      if (v.isEmpty() || !lun.present()) {
        continue;
      }
      Optional<Target> t = targetNamed(targets, lun.name());
      int number = t.flatMap(x -> lun.mappings().stream().filter(m -> m.targetIndex() == x.index()).findFirst())
          .map(Mapping::lunNumber).orElse(0);
      out.add(info(v.get(), lun, t.orElse(new Target(-1, lun.name(), "", lun.name(), List.of())), number,
          Optional.empty()));
    }
    out.sort(Comparator.comparing(VolumeInfo::id));
    return out;
  }

  // ---- snapshots -----------------------------------------------------------------------------------

  @Override
  public SnapshotInfo createSnapshot(String sourceVolumeId, String name, Map<String, String> parameters) {
    VolumeId v = parse(sourceVolumeId);
    SnapshotId want = QnapIds.snapshotFor(v, name);
    List<Lun> luns = api.luns();
    for (Lun l : luns) {
      Optional<VolumeId> other = QnapIds.lun(l.name());
      if (other.isEmpty() || !l.present()) {
        continue;
      }
      for (Snap s : api.snapshots(l)) {
        if (QnapIds.SNAP_NAME.matcher(s.name()).matches()
            && s.name().substring(s.name().length() - 12).equals(want.hash())) {
          if (!l.name().equals(v.lunName())) {
            throw CsiException.alreadyExists("snapshot '" + name + "' exists for another volume, " + other.get().id());
          }
          return snapshotInfo(new SnapshotId(v, s.name(), want.hash()), l, s);
        }
      }
    }
    Lun lun = lunNamed(luns, v.lunName()).filter(Lun::present).orElseThrow(() -> CsiException.notFound(
        "source_volume_id " + sourceVolumeId + " does not exist"));
    return snapshotInfo(want, lun, frozenWhile(sourceVolumeId, () -> api.createSnapshot(lun, want.snapName())));
  }

  /**
   * Runs {@code take} with the volume's filesystem frozen when it is mounted on this node (as the
   * file and local backends do): freezing flushes what the workload wrote, so the appliance's
   * snapshot holds it. A volume staged elsewhere is the workload's node's to flush.
   */
  private Snap frozenWhile(String volumeId, java.util.function.Supplier<Snap> take) {
    Optional<java.nio.file.Path> mounted = usage.of(volumeId).filter(u -> u.accessType() == AccessType.MOUNT)
        .flatMap(u -> u.stagingPaths().stream().filter(dev.caravan.storage.mount.MountTable::isMountPoint).findFirst());
    if (mounted.isEmpty()) {
      return take.get();
    }
    return dev.caravan.storage.fs.Filesystems.whileFrozen(mounted.get(), take);
  }

  private static SnapshotInfo snapshotInfo(SnapshotId id, Lun lun, Snap s) {
    return new SnapshotInfo(id.id(), id.snapName(), id.volume().id(), capacity(id.volume(), lun), s.createdAt(),
        s.ready());
  }

  @Override
  public void deleteSnapshot(String snapshotId) {
    Optional<SnapshotId> id = QnapIds.snapshot(snapshotId);
    if (id.isEmpty()) {
      return;
    }
    Optional<Lun> lun = lunNamed(api.luns(), id.get().volume().lunName()).filter(Lun::present);
    if (lun.isEmpty()) {
      return;
    }
    Optional<Snap> snap = api.snapshots(lun.get()).stream().filter(s -> s.name().equals(id.get().snapName())).findFirst();
    snap.ifPresent(s -> api.deleteSnapshot(lun.get(), s));
  }

  @Override
  public Optional<SnapshotInfo> findSnapshot(String snapshotId) {
    return listSnapshots().stream().filter(s -> s.id().equals(snapshotId)).findFirst();
  }

  @Override
  public List<SnapshotInfo> listSnapshots() {
    List<SnapshotInfo> out = new ArrayList<>();
    for (Lun l : api.luns()) {
      Optional<VolumeId> v = QnapIds.lun(l.name());
      if (v.isEmpty() || !l.present()) {
        continue;
      }
      for (Snap s : api.snapshots(l)) {
        java.util.regex.Matcher m = QnapIds.SNAP_NAME.matcher(s.name());
        if (m.matches()) {
          out.add(snapshotInfo(new SnapshotId(v.get(), s.name(), m.group(2)), l, s));
        }
      }
    }
    out.sort(Comparator.comparing(SnapshotInfo::id));
    return out;
  }

  // ---- expand, capacity ----------------------------------------------------------------------------

  @Override
  public ExpandResult expandVolume(String volumeId, CapacityRange range, AccessType accessType) {
    VolumeId v = parse(volumeId);
    Lun lun = lunNamed(api.luns(), v.lunName()).filter(Lun::present).orElseThrow(() -> CsiException.notFound(
        "volume_id " + volumeId + " does not exist"));
    // An encrypted volume's mapping grows on the node (NodeExpandVolume) even in block access.
    boolean node = accessType != AccessType.BLOCK || v.encrypted();
    long now = capacity(v, lun);
    if (range.hasLimit() && now > range.limitBytes()) {
      throw CsiException.outOfRange("volume " + volumeId + " already has " + now
          + " bytes, above capacity_range.limit_bytes " + range.limitBytes() + "; volumes never shrink");
    }
    if (!range.hasRequired() || range.requiredBytes() <= now) {
      return new ExpandResult(now, node);
    }
    if (range.requiredBytes() % GIB != 0) {
      throw CsiException.invalid("capacity_range.required_bytes " + range.requiredBytes() + " is not a whole number"
          + " of GiB (1073741824 bytes): QNAP LUNs are sized in whole GiB, and Caravan does not round silently");
    }
    return new ExpandResult(capacity(v, api.resizeLun(lun, lunGib(v, range.requiredBytes(), range))), node);
  }

  @Override
  public CapacityReport capacity(Map<String, String> parameters) {
    Pool p = api.pool(pool(parameters));
    long max = thin(parameters) ? p.freeBytes() : p.maxThickBytes();
    return new CapacityReport(p.freeBytes() / GIB * GIB, max / GIB * GIB, GIB);
  }

  // ---- publish: the fence --------------------------------------------------------------------------

  @Override
  public boolean publishes() {
    return true;
  }

  @Override
  public Map<String, String> publishVolume(String volumeId, String nodeId, Map<String, String> secrets) {
    VolumeId v = parse(volumeId);
    if (!QnapIds.isInitiator(nodeId)) {
      throw CsiException.notFound("node_id '" + IdRules.printable(nodeId) + "' is not a node of the qnap backend:"
          + " its node ids are the nodes' iSCSI initiator names (iqn.YYYY-MM.domain[:suffix], eui. or naa.)");
    }
    Lun lun = lunNamed(api.luns(), v.lunName()).filter(Lun::present).orElseThrow(() -> CsiException.notFound(
        "volume_id " + volumeId + " does not exist"));
    Optional<Chap> chap = chap(secrets);
    // An interrupted CreateVolume may have left the LUN without its target or mapping: finish that here.
    expose(v, lun, Optional.empty(), false);
    Target target = targetNamed(api.targets(), v.lunName()).orElseThrow(() -> new CsiException(Kind.UNAVAILABLE,
        "QNAP target '" + v.lunName() + "' is not listed right after it was made; retry"));
    Optional<String> open = fenceOpen(target);
    if (open.isPresent()) {
      throw CsiException.failedPrecondition("volume " + volumeId + " is not published: " + open.get());
    }
    List<String> holders = api.acl(target);
    List<String> others = holders.stream().filter(h -> !h.equals(nodeId)).toList();
    if (!others.isEmpty()) {
      throw CsiException.failedPrecondition("volume " + volumeId + " is published to node " + String.join(", ", others)
          + " (its target's ACL admits that initiator); a volume is written by one node at a time. Unpublish it"
          + " there first; for a node that is dead, `nomad volume detach` does that");
    }
    if (holders.isEmpty()) {
      api.allow(target, nodeId, chap);
      CrashPoints.reach("qnap.publish.after-allow"); // admitted, but the CO never heard so
      List<String> now = api.acl(target);
      if (!now.equals(List.of(nodeId))) {
        throw new CsiException(Kind.ABORTED, "after admitting " + nodeId + " the ACL of target " + target.name()
            + " is " + now + "; retry");
      }
    }
    return Map.of();
  }

  /**
   * Why {@code target}'s ACL does not fence, if it does not: its Default Policy admits initiators the
   * ACL does not list, or the appliance's answer does not prove that it denies them.
   */
  Optional<String> fenceOpen(Target target) {
    QnapApi.DefaultPolicy p = api.defaultPolicy(target);
    if (p.denies()) {
      return Optional.empty();
    }
    String state = p.access() == QnapApi.Access.UNPROVEN
        ? "does not show that its Default Policy (ACL row 0, initiatorIndex 0) denies initiators its ACL does not"
            + " list (" + p.reported() + ")"
        : "has a Default Policy (ACL row 0, initiatorIndex 0) that grants " + p.reported() + " to every initiator"
            + " its ACL does not list";
    return Optional.of("QNAP target '" + target.name() + "' " + state + ", so refusing other nodes would not keep"
        + " them out: any host on the SAN could log in to its LUN. Set the target's Default Policy to Deny Access"
        + " on the appliance (iSCSI & Fibre Channel > the target > ACL); `caravan doctor --driver qnap --config"
        + " <file>` lists every such target");
  }

  /** Caravan's targets (named and aliased after a volume's LUN) whose ACL does not fence, with why. */
  List<String> openFences() {
    List<String> out = new ArrayList<>();
    for (Target t : api.targets()) {
      if (t.name().equals(t.alias()) && QnapIds.lun(t.name()).isPresent()) {
        fenceOpen(t).ifPresent(out::add);
      }
    }
    return out;
  }

  /** Why the volume's target does not fence, if it does not (empty also when it has no target). */
  Optional<String> fenceOpen(String volumeId) {
    Optional<VolumeId> v = QnapIds.volume(volumeId);
    if (v.isEmpty()) {
      return Optional.empty();
    }
    return targetNamed(api.targets(), v.get().lunName()).flatMap(this::fenceOpen);
  }

  private Optional<Chap> chap(Map<String, String> secrets) {
    if (config.chap().isEmpty()) {
      return Optional.empty();
    }
    QnapConfig.ChapNames n = config.chap().get();
    return Optional.of(new Chap(secret(secrets, n.user(), "qnap.chap-user-secret"),
        secret(secrets, n.password(), "qnap.chap-password-secret"),
        n.mutualUser().map(u -> secret(secrets, u, "qnap.mutual-chap-user-secret")),
        n.mutualPassword().map(p -> secret(secrets, p, "qnap.mutual-chap-password-secret"))));
  }

  private static String secret(Map<String, String> secrets, String name, String setting) {
    String value = secrets.get(name);
    if (value == null || value.isEmpty()) {
      throw CsiException.invalid("secrets lack '" + name + "', which " + setting + " names for the target's CHAP;"
          + " add it to the volume's secrets");
    }
    return value;
  }

  @Override
  public void unpublishVolume(String volumeId, Optional<String> nodeId) {
    VolumeId v = parse(volumeId);
    if (nodeId.isPresent() && !QnapIds.isInitiator(nodeId.get())) {
      return; // not an initiator name: it can be in no ACL, so the volume is not published there
    }
    Optional<Target> target = targetNamed(api.targets(), v.lunName());
    if (target.isEmpty()) {
      return;
    }
    for (String holder : api.acl(target.get())) {
      if (nodeId.isEmpty() || nodeId.get().equals(holder)) {
        api.disallow(target.get(), holder);
      }
    }
  }
}

package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.CsiException.Kind;
import dev.caravan.csi.support.CrashPoints;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.w3c.dom.Element;

/**
 * The CGI API (QTS 5.x, QuTS hero h5): form posts to {@code /cgi-bin/...} selected by {@code func},
 * answered with HTTP 200 and XML whose {@code result} decides (qnap-api.md §1.1, §1.2). The session
 * id and every parameter travel in the POST body, so that secrets never appear in a URL.
 */
class CgiApi implements QnapApi {
  static final String PORTAL = "/cgi-bin/disk/iscsi_portal_setting.cgi";
  static final String LUN = "/cgi-bin/disk/iscsi_lun_setting.cgi";
  static final String TARGET = "/cgi-bin/disk/iscsi_target_setting.cgi";
  static final String SNAPSHOT = "/cgi-bin/disk/snapshot.cgi";
  static final String DISK = "/cgi-bin/disk/disk_manage.cgi";
  private static final long GIB = 1L << 30;
  private static final DateTimeFormatter ANSI_C = DateTimeFormatter.ofPattern("EEE MMM d HH:mm:ss yyyy", Locale.ENGLISH);

  final ApplianceLogin session;
  final Duration readyTimeout;
  /** The appliance reports a forked job by CGI name, not by job: one fork at a time. */
  private final Object forkLock = new Object();

  CgiApi(ApplianceLogin session, Duration readyTimeout) {
    this.session = session;
    this.readyTimeout = readyTimeout;
  }

  /** One CGI call: params plus the session id; an answer saying the session is invalid re-logs in once. */
  Element call(String cgi, String what, Map<String, String> params) {
    return session.call(sid -> {
      Map<String, String> form = new LinkedHashMap<>(params);
      form.put("sid", sid);
      Http.Response r;
      try {
        r = session.http().postForm(cgi, Map.of(), form);
      } catch (CsiException e) {
        throw named(what, e);
      }
      if (r.status() == 401 || r.status() == 403) {
        throw new ApplianceLogin.Expired("HTTP " + r.status() + " to " + what);
      }
      if (r.status() != 200) {
        throw new CsiException(Kind.UNAVAILABLE, "QNAP " + what + " answered HTTP " + r.status());
      }
      Element x = Xml.parse(r.body(), what);
      if (Xml.text(x, "authPassed").filter("0"::equals).isPresent()) {
        throw new ApplianceLogin.Expired("authPassed 0 on " + what);
      }
      return x;
    });
  }

  /**
   * The appliance's silence or 5xx, with the step Caravan was taking (the HTTP layer knows only the CGI's
   * path, which serves many steps), so that an operator sees which call the appliance failed.
   */
  static CsiException named(String what, CsiException e) {
    return new CsiException(e.kind(), "QNAP " + what + ": " + e.getMessage(), e);
  }

  static long result(Element x, String what) {
    String t = Xml.text(x, "result", "");
    try {
      return Long.parseLong(t);
    } catch (NumberFormatException e) {
      throw new CsiException(Kind.UNAVAILABLE, "QNAP " + what + " answered without a numeric result ('" + t + "')");
    }
  }

  /** The result, which must not be negative. */
  static long ok(Element x, String what) {
    long r = result(x, what);
    if (r < 0) {
      throw QnapErrors.of(what, r, "");
    }
    return r;
  }

  private static Map<String, String> params(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  @Override
  public Appliance appliance() {
    Element x = call(ApplianceLogin.LOGIN, "sysinfo", Map.of());
    String model = Xml.first(x, "model").flatMap(m -> Xml.text(m, "displayModelName")).orElse("unknown model");
    String firmware = Xml.first(x, "firmware").flatMap(m -> Xml.text(m, "version")).orElse("unknown");
    return new Appliance(model, firmware, Xml.text(x, "is_zfs", "0").equals("1"));
  }

  // ---- LUNs ------------------------------------------------------------------------------------

  @Override
  public List<Lun> luns() {
    Element x = call(PORTAL, "LUN list", params("func", "extra_get", "lunList", "1"));
    List<Lun> out = new ArrayList<>();
    for (Element e : Xml.all(x, "LUNInfo")) {
      out.add(lun(e, e));
    }
    return out;
  }

  @Override
  public Optional<Lun> lun(int index) {
    Element x = call(PORTAL, "lun_info " + index, params("func", "extra_get", "lun_info", "1", "lunID",
        Integer.toString(index)));
    Optional<Element> row = Xml.first(x, "LUNInfo").flatMap(i -> Xml.children(i, "row").stream().findFirst());
    if (row.isEmpty() || Xml.text(row.get(), "LUNIndex").isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(lun(row.get(), x));
  }

  /** A LUN from its fields ({@code e}) and the target mappings found under {@code mappings}. */
  private static Lun lun(Element e, Element mappings) {
    String name = Xml.text(e, "LUNName", "");
    long bytes = Xml.number(e, "capacity_bytes", -1);
    if (bytes < 0) {
      bytes = Xml.number(e, "LUNCapacity", 0) * GIB;
    }
    long status = Xml.number(e, "LUNStatus", 0);
    String naa = Xml.compact(e, "LUNNAA");
    LunState state;
    if (Xml.text(e, "isRemoving", "0").equals("1") || status == -1) {
      state = LunState.REMOVING;
    } else if (name.isEmpty() || status == -2) {
      state = LunState.GHOST;
    } else if (status == 0 || naa.isEmpty()) {
      state = LunState.CREATING;
    } else {
      state = LunState.READY;
    }
    List<Mapping> maps = new ArrayList<>();
    for (Element list : Xml.all(mappings, "LUNTargetList")) {
      for (Element row : Xml.children(list, "row")) {
        maps.add(new Mapping((int) Xml.number(row, "targetIndex", -1), (int) Xml.number(row, "LUNNumber", 0)));
      }
    }
    return new Lun((int) Xml.number(e, "LUNIndex", -1), name, bytes, Xml.text(e, "LUNThinAllocate", "0").equals("1"),
        (int) Xml.number(e, "poolID", 0), state, naa, "", maps);
  }

  /**
   * The LUN at {@code expected}'s index if it still carries that name; empty when the index is free, a
   * ghost, or reused by another LUN (then the one Caravan meant is gone: nothing may touch the index).
   */
  Optional<Lun> checked(Lun expected) {
    return lun(expected.index()).filter(l -> l.name().equals(expected.name()) && l.state() != LunState.GHOST);
  }

  Lun require(Lun expected, String doing) {
    return checked(expected).orElseThrow(() -> CsiException.notFound("QNAP LUN '" + expected.name() + "' is no longer"
        + " at index " + expected.index() + " (deleted, or the index was reused); not " + doing));
  }

  @Override
  public Lun createLun(String name, long gib, int poolId, boolean thin) {
    Map<String, String> p = params("func", "add_lun", "FileIO", "no", "LUNName", name, "LUNPath", name,
        "LUNCapacity", Long.toString(gib), "poolID", Integer.toString(poolId), "LUNThinAllocate", thin ? "1" : "0",
        "LUNSectorSize", "512", "lv_ifssd", "no");
    if (thin) {
      p.put("lv_threshold", "80");
    }
    int index = (int) ok(call(LUN, "add_lun " + name, p), "add_lun " + name);
    return waitReady(index, name);
  }

  @Override
  public Lun awaitReady(Lun lun) {
    return waitReady(lun.index(), lun.name());
  }

  Lun waitReady(int index, String name) {
    return Poll.until(readyTimeout, "creating LUN '" + name + "'", () -> {
      Optional<Lun> l = lun(index);
      if (l.isPresent() && !l.get().name().isEmpty() && !l.get().name().equals(name)) {
        throw new CsiException(Kind.INTERNAL, "QNAP answered add_lun '" + name + "' with index " + index
            + ", which holds LUN '" + l.get().name() + "'");
      }
      return l.filter(x -> x.state() == LunState.READY);
    });
  }

  @Override
  public Lun resizeLun(Lun lun, long gib) {
    Lun now = require(lun, "resizing it");
    String what = "edit_lun " + lun.name();
    Map<String, String> p = params("func", "edit_lun", "LUNIndex", Integer.toString(now.index()), "LUNName", now.name(),
        "LUNPath", now.name(), "LUNCapacity", Long.toString(gib), "LUNThinAllocate", now.thin() ? "1" : "0",
        "LUNStatus", "1", "lv_ifssd", "no");
    if (now.thin()) {
      p.put("lv_threshold", "80");
    }
    ok(call(LUN, what, p), what);
    return Poll.until(readyTimeout, "growing LUN '" + lun.name() + "' to " + gib + " GiB",
        () -> checked(lun).filter(l -> l.capacityBytes() >= gib * GIB));
  }

  @Override
  public void deleteLun(Lun lun) {
    Optional<Lun> now = checked(lun);
    if (now.isEmpty()) {
      return;
    }
    String what = "remove_lun " + lun.name();
    if (now.get().state() != LunState.REMOVING) {
      Poll.until(readyTimeout, what + " (dataset busy)", () -> {
        long r = result(call(LUN, what, params("func", "remove_lun", "LUNIndex", Integer.toString(lun.index()),
            "run_background", "1")), what);
        if (r == QnapErrors.DATASET_BUSY) {
          return Optional.empty();
        }
        if (r < 0 && r != QnapErrors.LUN_GONE && checked(lun).isPresent()) {
          throw QnapErrors.of(what, r, "");
        }
        return Optional.of(true);
      });
    }
    Poll.until(readyTimeout, "removing LUN '" + lun.name() + "'",
        () -> checked(lun).isPresent() ? Optional.empty() : Optional.of(true));
  }

  // ---- targets ---------------------------------------------------------------------------------

  @Override
  public List<Target> targets() {
    Element x = call(PORTAL, "target list", params("func", "extra_get", "targetList", "1"));
    List<Target> out = new ArrayList<>();
    for (Element t : Xml.all(x, "targetInfo")) {
      out.add(target(t));
    }
    return out;
  }

  private static Target target(Element t) {
    List<Integer> luns = new ArrayList<>();
    Xml.first(t, "targetLUNList").ifPresent(l -> Xml.children(l, "LUNIndex")
        .forEach(i -> luns.add(Integer.parseInt(i.getTextContent().strip()))));
    return new Target((int) Xml.number(t, "targetIndex", -1), Xml.text(t, "targetName", ""), Xml.compact(t, "targetIQN"),
        Xml.text(t, "targetAlias", ""), luns);
  }

  /** The target's detail if its index still holds that name and alias; empty otherwise. */
  private Optional<Element> detail(Target t) {
    Element x = call(PORTAL, "targetInfo " + t.name(), params("func", "extra_get", "targetInfo", "1", "targetIndex",
        Integer.toString(t.index())));
    return Xml.first(x, "targetInfo").flatMap(i -> Xml.children(i, "row").stream().findFirst())
        .filter(row -> Xml.text(row, "targetName", "").equals(t.name())
            && Xml.text(row, "targetAlias", "").equals(t.alias()));
  }

  @Override
  public List<String> acl(Target t) {
    Element row = detail(t).orElseThrow(() -> CsiException.notFound("QNAP target '" + t.name()
        + "' is no longer at index " + t.index()));
    List<String> out = new ArrayList<>();
    for (Element init : Xml.all(row, "targetInitInfo")) {
      String iqn = Xml.compact(init, "initiatorIQN");
      if (!iqn.isEmpty() && Xml.number(init, "initiatorIndex", 0) != 0) { // row 0 is the Default Policy
        out.add(iqn);
      }
    }
    return out;
  }

  /**
   * The Default Policy row's access field and its values. No public source names them: the field is
   * the one QNAP's lun_info uses for an initiator's access to a LUN ({@code LUNInitInfo>accessMode},
   * read by S3 and S4), the values follow the manual's order (Read-only, Read/Write, Deny Access) as
   * 1, 0 and 2. Unverified on an appliance: an answer without the field or with another value proves
   * nothing, and publish refuses (docs/qnap-appliance.md).
   */
  static final String ACCESS_MODE = "accessMode";

  static final String DENY = "2";

  @Override
  public DefaultPolicy defaultPolicy(Target t) {
    Element row = detail(t).orElseThrow(() -> CsiException.notFound("QNAP target '" + t.name()
        + "' is no longer at index " + t.index()));
    for (Element init : Xml.all(row, "targetInitInfo")) {
      if (Xml.number(init, "initiatorIndex", -1) == 0) {
        String mode = Xml.text(init, ACCESS_MODE, "").strip();
        Access access = switch (mode) {
          case "0" -> Access.READ_WRITE;
          case "1" -> Access.READ_ONLY;
          case DENY -> Access.DENY;
          default -> Access.UNPROVEN;
        };
        return new DefaultPolicy(access, mode.isEmpty() ? "its Default Policy row carries no " + ACCESS_MODE
            : ACCESS_MODE + " " + mode + " (" + access.name().toLowerCase(Locale.ROOT).replace('_', '/') + ")");
      }
    }
    return new DefaultPolicy(Access.UNPROVEN, "its ACL lists no Default Policy row (initiatorIndex 0)");
  }

  @Override
  public void denyByDefault(Target t) {
    if (detail(t).isEmpty()) {
      throw CsiException.notFound("QNAP target '" + t.name() + "' is no longer at index " + t.index());
    }
    String what = "edit_init Default Policy of " + t.name();
    // Row 0 carries CHAP too (S3, S5): off, as Caravan sets CHAP on each admitted initiator's own row.
    ok(call(TARGET, what, params("func", "edit_init", "targetIndex", Integer.toString(t.index()), "targetIQN", t.iqn(),
        "initiatorIndex", "0", ACCESS_MODE, DENY, "bCHAPEnable", "0", "bMutualCHAPEnable", "0")), what);
  }

  @Override
  public Target createTarget(String name) {
    String what = "add_target " + name;
    int index = (int) ok(call(TARGET, what, params("func", "add_target", "targetName", name, "targetAlias", name,
        "bTargetDataDigest", "0", "bTargetHeaderDigest", "0", "bTargetClusterEnable", "1")), what);
    return targets().stream().filter(t -> t.index() == index && t.name().equals(name)).findFirst()
        .orElseThrow(() -> new CsiException(Kind.UNAVAILABLE, "QNAP created target '" + name + "' at index " + index
            + " but does not list it there; a retry looks again"));
  }

  @Override
  public void deleteTarget(Target t) {
    if (detail(t).isEmpty()) {
      return; // gone, or the index now holds another target: never ours to delete
    }
    String what = "remove_target " + t.name();
    long r = result(call(TARGET, what, params("func", "remove_target", "targetIndex", Integer.toString(t.index()))),
        what);
    if (r < 0 && detail(t).isPresent()) { // result is 0 (S2) or the index (S3): only a negative one fails
      throw QnapErrors.of(what, r, "");
    }
  }

  @Override
  public int map(Lun lun, Target target) {
    require(lun, "mapping it");
    if (detail(target).isEmpty()) {
      throw CsiException.notFound("QNAP target '" + target.name() + "' is no longer at index " + target.index());
    }
    String what = "map " + lun.name() + " to " + target.name();
    long r = result(call(TARGET, what, params("func", "add_lun", "LUNIndex", Integer.toString(lun.index()),
        "targetIndex", Integer.toString(target.index()))), what);
    if (r < 0 && QnapErrors.kind(r) != Kind.ALREADY_EXISTS) { // already mapped: by another controller, a moment ago
      throw QnapErrors.of(what, r, "");
    }
    return require(lun, "reading its LUN number").mappings().stream().filter(m -> m.targetIndex() == target.index())
        .findFirst().map(Mapping::lunNumber)
        .orElseThrow(() -> new CsiException(Kind.UNAVAILABLE, "QNAP mapped " + lun.name() + " but lists no LUN number"
            + " for target " + target.name() + "; a retry looks again"));
  }

  @Override
  public void unmap(Lun lun, Target target) {
    if (checked(lun).isEmpty()) {
      return;
    }
    String what = "unmap " + lun.name() + " from " + target.name();
    long r = result(call(TARGET, what, params("func", "remove_lun", "LUNIndex", Integer.toString(lun.index()),
        "targetIndex", Integer.toString(target.index()))), what);
    if (r < 0 && QnapErrors.kind(r) != Kind.NOT_FOUND) {
      throw QnapErrors.of(what, r, "");
    }
  }

  @Override
  public void allow(Target target, String initiatorIqn, Optional<Chap> chap) {
    if (detail(target).isEmpty()) {
      throw CsiException.notFound("QNAP target '" + target.name() + "' is no longer at index " + target.index());
    }
    Map<String, String> p = params("func", "add_init", "targetIndex", Integer.toString(target.index()),
        "targetIQN", target.iqn(), "initiatorIQN", initiatorIqn, "initiatorAlias", "caravan",
        "bCHAPEnable", chap.isPresent() ? "1" : "0",
        "bMutualCHAPEnable", chap.flatMap(Chap::mutualUser).isPresent() ? "1" : "0", "ha_sync", "1");
    chap.ifPresent(c -> {
      p.put("CHAPUserName", c.user());
      p.put("CHAPPasswd", c.password());
      c.mutualUser().ifPresent(u -> p.put("mutualCHAPUserName", u));
      c.mutualPassword().ifPresent(s -> p.put("mutualCHAPPasswd", s));
    });
    String what = "add_init " + initiatorIqn + " to " + target.name();
    long r = result(call(TARGET, what, p), what);
    if (r < 0 && QnapErrors.kind(r) != Kind.ALREADY_EXISTS) {
      throw QnapErrors.of(what, r, "");
    }
  }

  @Override
  public void disallow(Target target, String initiatorIqn) {
    if (detail(target).isEmpty()) {
      return;
    }
    String what = "remove_init " + initiatorIqn + " from " + target.name();
    long r = result(call(TARGET, what, params("func", "remove_init", "targetIndex", Integer.toString(target.index()),
        "targetIQN", target.iqn(), "initiatorIQN", initiatorIqn, "ha_sync", "1")), what);
    if (r < 0 && QnapErrors.kind(r) != Kind.NOT_FOUND) {
      throw QnapErrors.of(what, r, "");
    }
  }

  // ---- snapshots -------------------------------------------------------------------------------

  @Override
  public List<Snap> snapshots(Lun lun) {
    List<Snap> out = new ArrayList<>();
    int page = 100;
    for (int start = 0; ; start += page) {
      String what = "snapshot list of " + lun.name();
      Element x = call(SNAPSHOT, what, params("func", "extra_get", "snapshot_list", "1", "LUNIndex",
          Integer.toString(lun.index()), "snap_start", Integer.toString(start), "snap_count", Integer.toString(page)));
      long r = Xml.text(x, "result").isPresent() ? result(x, what) : 0;
      if (r < 0) {
        if (QnapErrors.kind(r) == Kind.NOT_FOUND) {
          return List.of();
        }
        throw QnapErrors.of(what, r, "");
      }
      List<Element> rows = Xml.first(x, "SnapshotList").map(l -> Xml.children(l, "row")).orElse(List.of());
      for (Element row : rows) {
        String status = Xml.text(row, "status", "");
        if (status.equals("-1")) {
          continue; // being removed
        }
        out.add(new Snap(Xml.number(row, "snapshot_id", -1), Xml.text(row, "snapshot_name", ""),
            time(Xml.text(row, "create_time", "")), status.equals("1") || status.equalsIgnoreCase("ready")));
      }
      if (rows.size() < page) {
        return out;
      }
    }
  }

  /** {@code create_time}: epoch seconds, or ANSI-C text as QuTScloud answers ("Fri May 29 10:13:33 2026"). */
  static Instant time(String t) {
    if (t.matches("[0-9]{1,12}")) {
      return Instant.ofEpochSecond(Long.parseLong(t));
    }
    try {
      return LocalDateTime.parse(t.replaceAll("\\s+", " "), ANSI_C).toInstant(ZoneOffset.UTC);
    } catch (DateTimeParseException e) {
      return Instant.EPOCH;
    }
  }

  @Override
  public Snap createSnapshot(Lun lun, String name) {
    require(lun, "snapshotting it");
    String what = "create_snapshot " + name + " of " + lun.name();
    long id = ok(call(SNAPSHOT, what, params("func", "create_snapshot", "lunID", Integer.toString(lun.index()),
        "snapshot_name", name, "snapshot_description", "caravan", "expire_min", "0", "vital", "1",
        "snapshot_type", "0")), what);
    CrashPoints.reach("qnap.snapshot.after-create"); // asked for, not yet seen ready
    return Poll.until(readyTimeout, "snapshot '" + name + "'",
        () -> snapshots(lun).stream().filter(s -> s.id() == id && s.ready()).findFirst());
  }

  @Override
  public void deleteSnapshot(Lun lun, Snap snap) {
    if (checked(lun).isEmpty()) {
      return; // the LUN is gone, and its snapshots with it
    }
    String what = "del_snapshot " + snap.name() + " of " + lun.name();
    long r = result(call(SNAPSHOT, what, params("func", "del_snapshot", "snapshotID", Long.toString(snap.id()))), what);
    if (r < 0 && r != QnapErrors.SNAPSHOT_GONE && r != QnapErrors.LUN_GONE) {
      throw QnapErrors.of(what, r, "");
    }
    Poll.until(readyTimeout, "deleting snapshot '" + snap.name() + "'",
        () -> snapshots(lun).stream().anyMatch(s -> s.id() == snap.id()) ? Optional.empty() : Optional.of(true));
  }

  @Override
  public Lun cloneSnapshot(Lun source, Snap snap, String newName, int poolId, boolean instant) {
    require(source, "cloning its snapshot");
    String func = instant ? "instant_clone_qsnapshot" : "clone_qsnapshot";
    String what = func + " " + snap.name() + " to " + newName;
    synchronized (forkLock) {
      Element x = call(SNAPSHOT, what, params("func", func, "by_lun", "1", "snapshotID", Long.toString(snap.id()),
          "new_name", newName, "poolID", Integer.toString(poolId)));
      if (Xml.text(x, "fork", "0").equals("1")) {
        Element done = Poll.until(readyTimeout, what, () -> {
          Element r = call(SNAPSHOT, "get_return", params("func", "get_return", "cginame", "snapshot.cgi"));
          return Xml.text(r, "processing", "0").equals("1") ? Optional.empty() : Optional.of(r);
        });
        ok(done, what);
      } else {
        ok(x, what);
      }
    }
    return Poll.until(readyTimeout, "clone '" + newName + "'", () -> luns().stream()
        .filter(l -> l.name().equals(newName) && l.state() == LunState.READY).findFirst());
  }

  @Override
  public Pool pool(int poolId) {
    String what = "poolInfo " + poolId;
    Element x = call(DISK, what, params("store", "poolInfo", "func", "extra_get", "Pool_Info", "1", "poolID",
        Integer.toString(poolId)));
    Optional<Element> row = Xml.first(x, "Pool_Index").flatMap(p -> Xml.children(p, "row").stream()
        .filter(r -> Xml.number(r, "poolID", -1) == poolId).findFirst());
    if (row.isEmpty()) {
      throw CsiException.invalid("QNAP pool " + poolId + " does not exist on the appliance");
    }
    Element r = row.get();
    long free = Xml.number(r, "real_freesize_bytes", Xml.number(r, "freesize_bytes", 0));
    return new Pool(poolId, Xml.number(r, "capacity_bytes", 0), free, Xml.number(r, "max_thick_create_size_bytes", free),
        Xml.number(r, "pool_status", 0) == 0);
  }

  @Override
  public void close() {
    session.close();
  }
}

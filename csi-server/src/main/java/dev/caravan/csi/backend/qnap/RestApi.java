package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.CsiException.Kind;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.support.Json;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * QuTS hero's REST/JSON API (hero h5/h6; qnap-api.md §1.3): the session id in a {@code sid} header,
 * answers {@code {"error_code":0,"error_message":"Success",...}} with HTTP 200 even when the session
 * expired ({@code error_code -22}). Storage volumes, LUNs, targets, mappings and snapshots go through
 * REST. The REST calls the sources name no endpoint for (initiator ACLs, clones, sysinfo, pool detail)
 * go through the CGI this class extends, which hero h5 accepts; whether hero h6 does is open (§6.5).
 */
final class RestApi extends CgiApi {
  private static final int SID_INVALID = -22;

  RestApi(ApplianceLogin session, Duration readyTimeout) {
    super(session, readyTimeout);
  }

  /** One REST call; the parsed answer, which must carry error_code 0. */
  private Map<String, Object> rest(String method, String path, Optional<Map<String, Object>> body, String what) {
    return session.call(sid -> {
      Http.Response r;
      try {
        r = session.http().json(method, path, body.map(Json::write), sid);
      } catch (CsiException e) {
        throw named(what, e);
      }
      if (r.status() == 401 || r.status() == 403) {
        throw new ApplianceLogin.Expired("HTTP " + r.status() + " to " + what);
      }
      Map<String, Object> m;
      try {
        m = asMap(Json.parse(r.body()));
      } catch (IllegalArgumentException e) {
        throw new CsiException(Kind.UNAVAILABLE, "QNAP " + what + " answered HTTP " + r.status()
            + " with something that is not its JSON");
      }
      long code = number(m.get("error_code"), 0);
      String words = String.valueOf(m.getOrDefault("error_message", ""));
      if (code == SID_INVALID) {
        throw new ApplianceLogin.Expired(words.isEmpty() ? "error_code -22" : words);
      }
      if (code != 0) {
        throw QnapErrors.of(what, code, words);
      }
      return m;
    });
  }

  @SuppressWarnings("unchecked") // JSON objects parse as Map<String, Object>
  private static Map<String, Object> asMap(Object o) {
    return o instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
  }

  private static List<Map<String, Object>> list(Map<String, Object> m, String key) {
    List<Map<String, Object>> out = new ArrayList<>();
    if (m.get(key) instanceof List<?> l) {
      l.forEach(o -> out.add(asMap(o)));
    }
    return out;
  }

  private static long number(Object o, long dflt) {
    if (o instanceof Number n) {
      return n.longValue();
    }
    if (o instanceof String s) {
      try {
        return Long.parseLong(s.strip());
      } catch (NumberFormatException e) {
        return dflt;
      }
    }
    return dflt;
  }

  private static String text(Map<String, Object> m, String key) {
    Object o = m.get(key);
    return o == null ? "" : String.valueOf(o).strip();
  }

  private static Map<String, Object> object(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  // ---- LUNs: a hero LUN is a zvol storage volume (capacity, pool) plus its iSCSI LUN (index, NAA) ----

  @Override
  public List<Lun> luns() {
    Map<String, Map<String, Object>> volumes = new LinkedHashMap<>();
    for (Map<String, Object> v : list(rest("GET", "/api/storage/v1/volumes", Optional.empty(), "volume list"), "volumes")) {
      if (number(v.get("volume_type"), 0) == 3) {
        volumes.put(text(v, "id"), v);
      }
    }
    List<Lun> out = new ArrayList<>();
    for (Map<String, Object> l : list(rest("GET", "/api/iscsi/v1/luns", Optional.empty(), "LUN list"), "luns")) {
      Map<String, Object> v = volumes.getOrDefault(text(l, "volume_id"), Map.of());
      LunState state;
      if (Boolean.TRUE.equals(l.get("removing")) || Boolean.TRUE.equals(v.get("deleting"))) {
        state = LunState.REMOVING;
      } else if (text(l, "name").isEmpty() || v.isEmpty()) {
        state = LunState.GHOST;
      } else if (Boolean.TRUE.equals(v.get("creating")) || text(l, "naa").isEmpty()) {
        state = LunState.CREATING;
      } else {
        state = LunState.READY;
      }
      List<Mapping> maps = new ArrayList<>();
      for (Map<String, Object> t : list(l, "targets")) {
        maps.add(new Mapping((int) number(t.get("target_index"), -1), (int) number(t.get("lun_number"), 0)));
      }
      out.add(new Lun((int) number(l.get("index"), -1), text(l, "name"), number(v.get("capacity"), 0),
          "thin".equals(text(v, "provision_type")), (int) number(v.get("pool_id"), 0), state,
          text(l, "naa").replaceAll("\\s+", ""), text(l, "volume_id"), maps));
    }
    return out;
  }

  @Override
  public Optional<Lun> lun(int index) {
    return luns().stream().filter(l -> l.index() == index).findFirst();
  }

  @Override
  public Lun createLun(String name, long gib, int poolId, boolean thin) {
    rest("POST", "/api/storage/v1/volumes", Optional.of(object("label", name, "type", "zvol", "pool_id", poolId,
        "capacity", gib << 30, "provision_type", thin ? "thin" : "thick", "iscsi", object("create_lun", true),
        "zfs", object())), "create volume " + name);
    return awaitReady(new Lun(-1, name, 0, thin, poolId, LunState.CREATING, "", "", List.of()));
  }

  @Override
  public Lun awaitReady(Lun lun) {
    return Poll.until(readyTimeout, "creating LUN '" + lun.name() + "'", () -> luns().stream()
        .filter(l -> l.name().equals(lun.name()) && l.state() == LunState.READY).findFirst());
  }

  @Override
  public Lun resizeLun(Lun lun, long gib) {
    Lun now = require(lun, "resizing it");
    // Not PUT /api/iscsi/v1/luns/:i, which changes only the size the LUN reports (S6).
    rest("PUT", "/api/storage/v1/volumes/" + now.volumeRef() + "/reshaping", Optional.of(object("capacity", gib << 30)),
        "resize volume " + lun.name());
    return Poll.until(readyTimeout, "growing LUN '" + lun.name() + "' to " + gib + " GiB",
        () -> checked(lun).filter(l -> l.capacityBytes() >= gib << 30));
  }

  @Override
  public void deleteLun(Lun lun) {
    Optional<Lun> now = checked(lun);
    if (now.isEmpty()) {
      return;
    }
    if (now.get().state() != LunState.REMOVING) {
      // Deleting the storage volume takes its LUN with it; deleting the LUN first would orphan the volume.
      rest("DELETE", "/api/storage/v1/volumes/" + now.get().volumeRef(), Optional.empty(), "delete volume " + lun.name());
    }
    Poll.until(readyTimeout, "removing LUN '" + lun.name() + "'",
        () -> checked(lun).isPresent() ? Optional.empty() : Optional.of(true));
  }

  // ---- targets and mappings --------------------------------------------------------------------

  @Override
  public List<Target> targets() {
    List<Target> out = new ArrayList<>();
    for (Map<String, Object> t : list(rest("GET", "/api/iscsi/v1/targets", Optional.empty(), "target list"), "targets")) {
      List<Integer> luns = new ArrayList<>();
      if (t.get("lun_indexes") instanceof List<?> l) {
        l.forEach(i -> luns.add((int) number(i, -1)));
      }
      out.add(new Target((int) number(t.get("index"), -1), text(t, "name"), text(t, "iqn").replaceAll("\\s+", ""),
          text(t, "alias"), luns));
    }
    return out;
  }

  private Optional<Target> current(Target t) {
    return targets().stream().filter(x -> x.index() == t.index() && x.name().equals(t.name())
        && x.alias().equals(t.alias())).findFirst();
  }

  @Override
  public Target createTarget(String name) {
    rest("POST", "/api/iscsi/v1/targets", Optional.of(object("name", name, "alias", name)), "create target " + name);
    return targets().stream().filter(t -> t.name().equals(name)).findFirst()
        .orElseThrow(() -> new CsiException(Kind.UNAVAILABLE, "QNAP created target '" + name
            + "' but does not list it; a retry looks again"));
  }

  @Override
  public void deleteTarget(Target t) {
    if (current(t).isEmpty()) {
      return;
    }
    rest("DELETE", "/api/iscsi/v1/targets/" + t.index(), Optional.empty(), "delete target " + t.name());
  }

  @Override
  public int map(Lun lun, Target target) {
    require(lun, "mapping it");
    if (current(target).isEmpty()) {
      throw CsiException.notFound("QNAP target '" + target.name() + "' is no longer at index " + target.index());
    }
    try {
      rest("POST", "/api/iscsi/v1/targets/" + target.index() + "/luns/" + lun.index(), Optional.empty(),
          "map " + lun.name() + " to " + target.name());
    } catch (CsiException e) {
      if (e.kind() != Kind.ALREADY_EXISTS) { // already mapped: by another controller, a moment ago
        throw e;
      }
    }
    return require(lun, "reading its LUN number").mappings().stream().filter(m -> m.targetIndex() == target.index())
        .findFirst().map(Mapping::lunNumber)
        .orElseThrow(() -> new CsiException(Kind.UNAVAILABLE, "QNAP mapped " + lun.name()
            + " but lists no LUN number for target " + target.name() + "; a retry looks again"));
  }

  @Override
  public void unmap(Lun lun, Target target) {
    if (checked(lun).isEmpty() || current(target).isEmpty()) {
      return;
    }
    rest("DELETE", "/api/iscsi/v1/targets/" + target.index() + "/luns/" + lun.index(), Optional.empty(),
        "unmap " + lun.name() + " from " + target.name());
  }

  // ---- snapshots -------------------------------------------------------------------------------

  @Override
  public List<Snap> snapshots(Lun lun) {
    Optional<Lun> now = checked(lun);
    if (now.isEmpty()) {
      return List.of();
    }
    List<Snap> out = new ArrayList<>();
    for (Map<String, Object> s : list(rest("GET", "/api/snapmgr/v1/volumes/" + now.get().volumeRef() + "/snapshots",
        Optional.empty(), "snapshot list of " + lun.name()), "snapshots")) {
      String status = text(s, "status");
      if (status.equals("deleting")) {
        continue;
      }
      out.add(new Snap(number(s.get("id"), -1), text(s, "name"), Instant.ofEpochSecond(number(s.get("created"), 0)),
          status.equals("ready")));
    }
    return out;
  }

  @Override
  public Snap createSnapshot(Lun lun, String name) {
    Lun now = require(lun, "snapshotting it");
    rest("POST", "/api/snapmgr/v1/volumes/" + now.volumeRef() + "/snapshots", Optional.of(object("name", name,
        "expire_min", 0, "vital", true)), "create snapshot " + name + " of " + lun.name());
    CrashPoints.reach("qnap.snapshot.after-create"); // asked for, not yet seen ready
    return Poll.until(readyTimeout, "snapshot '" + name + "'",
        () -> snapshots(lun).stream().filter(s -> s.name().equals(name) && s.ready()).findFirst());
  }

  @Override
  public void deleteSnapshot(Lun lun, Snap snap) {
    if (checked(lun).isEmpty()) {
      return;
    }
    try {
      rest("DELETE", "/api/snapmgr/v1/snapshots/" + snap.id(), Optional.empty(),
          "delete snapshot " + snap.name() + " of " + lun.name());
    } catch (CsiException e) {
      if (e.kind() != Kind.NOT_FOUND) {
        throw e;
      }
    }
    Poll.until(readyTimeout, "deleting snapshot '" + snap.name() + "'",
        () -> snapshots(lun).stream().anyMatch(s -> s.id() == snap.id()) ? Optional.empty() : Optional.of(true));
  }
}

package dev.caravan.csi.backend.qnap;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.caravan.csi.support.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;

/**
 * A QNAP appliance as qnap-api.md describes it, in process: the CGI API (QTS 5.x; hero h5) and, in the
 * hero flavour, the REST/JSON API, on one HTTP(S) server on loopback. It keeps the quirks a client
 * must survive: HTTP 200 for every error, {@code result} meaning an index for some calls and a code for
 * others, LUN and target indices reused (the lowest free one), new LUNs at {@code LUNStatus 0} for a
 * few reads, deletes that leave an {@code isRemoving} row and then a ghost row (empty name, status -2)
 * until the index is reused, snapshot deletes that finish late, clones that answer {@code <fork>1} and
 * report through {@code get_return}, session expiry ({@code authPassed 0}; REST {@code error_code -22}),
 * a login lockout after repeated failures, injected errors, and a recorder of every call; and the faults
 * of an appliance in trouble: every answer late ({@link #delay}), every answer a 5xx ({@link #failingWith}),
 * connections refused ({@link #refuse}).
 *
 * <p>Where the sources leave something open, the simulator takes one reading and says so:
 * {@code remove_target} answers 0 (S2), target-CGI {@code add_lun} answers the target index (S5),
 * snapshot {@code status} is 0 while taking, 1 when ready and -1 while being deleted. A target
 * admits the initiators of its ACL rows, and every other initiator as its Default Policy (row 0) says:
 * a new target's grants read/write to all of them, as QNAP's manual says of the factory default
 * ({@link #admits}); row 0's {@code accessMode} (0 read/write, 1 read-only, 2 deny) is this
 * simulator's reading of a field no source names for the target ACL (qnap-api.md §1.5), and
 * {@link #defaultPolicyHidden} models firmware that answers without it. The REST field names beyond those S6 gives
 * ({@code label, type, pool_id, capacity, provision_type, creating, lun_index, volume_type,
 * error_code, error_message}) are this simulator's choice, shared with {@link RestApi}. Logins for both
 * APIs go through {@code authLogin.cgi}, whose session id the REST API takes in its {@code sid} header
 * (S6 names the header, not where the id comes from). {@link #cgiWritesRefused} models QuTS hero h6.0.1
 * refusing CGI writes (S5 saw {@code add_target} and {@code add_lun} refused); which CGI writes h6 refuses
 * beyond those is open, and the simulator refuses every one except {@code snapshot.cgi}'s.
 *
 * <p>Protocol violations a faithful client never commits (a second LUN of one name, an {@code
 * edit_lun} without the full description, an unmapped target deleted with LUNs, a secret in a URL)
 * are answered as the appliance would and also recorded in {@link #violations()}.
 */
final class QnapSimulator implements AutoCloseable {
  enum Flavour {
    QTS,
    HERO
  }

  /** One request as the appliance saw it: path, method, merged parameters, and the query keys alone. */
  record Call(String method, String path, String func, Map<String, String> params, List<String> queryKeys) {}

  static final String USER = "admin";
  static final String PASSWORD = "Pa55 w0rd/ü";
  static final String IQN_PREFIX = "iqn.2004-04.com.qnap:ts-873a:iscsi.";
  static final String IQN_POSTFIX = ".d3adb3";
  private static final long GIB = 1L << 30;
  private static final DateTimeFormatter ANSI_C =
      DateTimeFormatter.ofPattern("EEE MMM d HH:mm:ss yyyy", Locale.ENGLISH).withZone(ZoneOffset.UTC);

  // ---- knobs (tests set them before or between calls) --------------------------------------------
  volatile int creatingReads = 2;
  volatile int removingReads = 2;
  volatile int resizeReads = 1;
  volatile int snapshotReads = 1;
  volatile int forkReads = 2;
  volatile int lockoutAfter = 3;
  volatile boolean multiRoot;
  volatile boolean whitespaceIqn;
  volatile boolean cgiWritesRefused;
  volatile long maxLunBytes = 1L << 50;
  /** The target detail's Default Policy row answers without {@code accessMode} (firmware that has none). */
  volatile boolean defaultPolicyHidden;
  /** How long a session lives after its login (the appliance's session timeout). */
  volatile java.time.Duration sessionTtl = java.time.Duration.ofHours(1);

  /** Every request waits this long before the appliance looks at it: an appliance busy or stalled. */
  volatile java.time.Duration delay = java.time.Duration.ZERO;
  /** While not 0, every request is answered with this HTTP status (the web server up, its backend not). */
  volatile int failingWith;

  private final Flavour flavour;
  private final Optional<SSLContext> tls;
  private final int port;
  /** Null while {@link #refuse}d: nothing listens on the port. */
  private volatile HttpServer server;
  private final List<Call> calls = new CopyOnWriteArrayList<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private volatile TargetListener listener = new TargetListener() {};

  // ---- state, guarded by this --------------------------------------------------------------------
  /** Session id → when it stops being valid. */
  private final Map<String, Instant> sessions = new HashMap<>();
  private int failedLogins;
  private int logins;
  private final TreeMap<Integer, LunRow> luns = new TreeMap<>();
  private final TreeMap<Integer, TargetRow> targets = new TreeMap<>();
  private final TreeMap<Long, SnapRow> snaps = new TreeMap<>();
  private final Map<Integer, Long> pools = new TreeMap<>(Map.of(1, 64L << 40, 2, 8L * GIB));
  private long nextSnapshot = 1;
  private long nextVolume = 1;
  private Fork fork;
  private final Map<String, List<Integer>> injected = new HashMap<>();
  private final Map<String, List<Integer>> injectedHttp = new HashMap<>();

  private static final class LunRow {
    int index;
    String name;
    long bytes;
    boolean thin;
    int pool;
    int creatingLeft;
    int removingLeft = -1;
    boolean ghost;
    String naa = "";
    String volumeId;
    long resizeTo;
    int resizeLeft;
    final Map<Integer, Integer> mappings = new TreeMap<>();
    long instantOrigin = -1;
  }

  private static final class TargetRow {
    int index;
    String name;
    String alias;
    final List<Integer> luns = new ArrayList<>();
    final LinkedHashMap<String, Optional<QnapApi.Chap>> acl = new LinkedHashMap<>();
    /** Row 0, the Default Policy: what an initiator the rows do not list gets. The factory's: read/write. */
    int defaultAccess = READ_WRITE;
    Optional<QnapApi.Chap> defaultChap = Optional.empty();
  }

  static final int READ_WRITE = 0;
  static final int READ_ONLY = 1;
  static final int DENY = 2;

  private static final class SnapRow {
    long id;
    int lun;
    String name;
    Instant created;
    int readyLeft;
    int deletingLeft = -1;
  }

  private record Fork(int left, int result, Runnable finish) {}

  QnapSimulator(Flavour flavour) throws IOException {
    this(flavour, Optional.empty());
  }

  QnapSimulator(Flavour flavour, Optional<SSLContext> tls) throws IOException {
    this.flavour = flavour;
    this.tls = tls;
    this.server = listen(0);
    this.port = server.getAddress().getPort();
  }

  private HttpServer listen(int at) throws IOException {
    InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), at);
    HttpServer s;
    if (tls.isPresent()) {
      HttpsServer https = HttpsServer.create(address, 0);
      https.setHttpsConfigurator(new HttpsConfigurator(tls.get()));
      s = https;
    } else {
      s = HttpServer.create(address, 0);
    }
    s.createContext("/", this::handle);
    // The appliance's web server answers requests side by side; the state stays serialized (synchronized).
    s.setExecutor(java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor());
    s.start();
    return s;
  }

  URI url() {
    return URI.create((tls.isPresent() ? "https" : "http") + "://127.0.0.1:" + port);
  }

  /**
   * The appliance stops listening (powered off, its web server down, a firewall rejecting): connections
   * to its port are refused. Its state stays; {@link #accept} listens again on the same port.
   */
  synchronized void refuse() {
    if (server != null) {
      server.stop(0);
      server = null;
    }
  }

  /** Listens again, on the same port, after {@link #refuse}. */
  synchronized void accept() throws IOException {
    if (server == null) {
      server = listen(port);
    }
  }

  void listener(TargetListener l) {
    listener = l;
  }

  List<Call> calls() {
    return List.copyOf(calls);
  }

  List<String> violations() {
    return List.copyOf(violations);
  }

  synchronized int logins() {
    return logins;
  }

  /** Every session ends now, as the appliance's session timeout would end them. */
  synchronized void expireSessions() {
    sessions.clear();
  }

  synchronized int liveSessions() {
    return (int) sessions.values().stream().filter(end -> Instant.now().isBefore(end)).count();
  }

  /** The next {@code times} calls of {@code func} (a CGI func, or "METHOD /api/path") answer {@code result}. */
  synchronized void inject(String func, int result, int times) {
    injected.computeIfAbsent(func, k -> new ArrayList<>()).addAll(java.util.Collections.nCopies(times, result));
  }

  /** The next call of {@code func} answers with HTTP {@code status}. */
  synchronized void injectHttp(String func, int status) {
    injectedHttp.computeIfAbsent(func, k -> new ArrayList<>()).add(status);
  }

  /** Every LUN still being created is ready at the next read. */
  synchronized void finishCreating() {
    luns.values().forEach(l -> l.creatingLeft = Math.min(l.creatingLeft, 1));
  }

  synchronized void pool(int id, long bytes) {
    pools.put(id, bytes);
  }

  // ---- oracle views for tests --------------------------------------------------------------------

  /** Names of the LUNs that exist (not removing, not ghosts), by index. */
  synchronized Map<Integer, String> lunNames() {
    Map<Integer, String> out = new TreeMap<>();
    luns.forEach((i, l) -> {
      if (!l.ghost && l.removingLeft < 0) {
        out.put(i, l.name);
      }
    });
    return out;
  }

  synchronized long lunBytes(String name) {
    return luns.values().stream().filter(l -> name.equals(l.name)).mapToLong(l -> l.bytes).findFirst().orElse(-1);
  }

  synchronized Map<Integer, String> targetNames() {
    Map<Integer, String> out = new TreeMap<>();
    targets.forEach((i, t) -> out.put(i, t.name));
    return out;
  }

  synchronized List<String> acl(String targetName) {
    return targets.values().stream().filter(t -> t.name.equals(targetName)).findFirst()
        .map(t -> List.copyOf(t.acl.keySet())).orElse(List.of());
  }

  /**
   * Whether {@code initiator} may log in to the target and reach its LUNs, as the appliance decides it:
   * listed in the target's ACL, or not listed and the Default Policy does not deny.
   */
  synchronized boolean admits(String targetName, String initiator) {
    TargetRow t = targets.values().stream().filter(x -> x.name.equals(targetName)).findFirst().orElseThrow();
    return t.acl.containsKey(initiator) || t.defaultAccess != DENY;
  }

  /** The operator edits the target's Default Policy in the appliance's UI (0 read/write, 1 read-only, 2 deny). */
  synchronized void setDefaultAccess(String targetName, int access) {
    TargetRow t = targets.values().stream().filter(x -> x.name.equals(targetName)).findFirst().orElseThrow();
    t.defaultAccess = access;
    listener.defaultPolicyChanged(t.index, access != DENY);
  }

  /** Creates a target as the appliance's own UI would (not through Caravan): the factory Default Policy. */
  synchronized void createForeignTarget(String name) {
    targetCgi("add_target", Map.of("targetName", name, "targetAlias", name));
  }

  synchronized Optional<QnapApi.Chap> chapOf(String targetName, String initiator) {
    return targets.values().stream().filter(t -> t.name.equals(targetName)).findFirst()
        .flatMap(t -> t.acl.getOrDefault(initiator, Optional.empty()));
  }

  synchronized List<String> snapshotNames() {
    return snaps.values().stream().filter(s -> s.deletingLeft < 0).map(s -> s.name).toList();
  }

  /** Creates a LUN as the appliance's own UI would (not through Caravan); returns its index. */
  synchronized int createForeignLun(String name, long gib) {
    LunRow l = newLun(name, gib * GIB, true, 1);
    l.creatingLeft = 0;
    return l.index;
  }

  /** Deletes a LUN behind Caravan's back, at once (its index becomes free for reuse). */
  synchronized void deleteBehindTheBack(String name) {
    luns.values().stream().filter(l -> name.equals(l.name)).findFirst().ifPresent(l -> {
      targets.values().forEach(t -> t.luns.remove(Integer.valueOf(l.index)));
      snaps.values().removeIf(s -> s.lun == l.index);
      luns.remove(l.index);
    });
  }

  @Override
  public void close() {
    refuse();
  }

  // ---- HTTP --------------------------------------------------------------------------------------

  private void handle(HttpExchange ex) throws IOException {
    try (ex) {
      String path = ex.getRequestURI().getPath();
      String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      java.time.Duration wait = delay;
      if (!wait.isZero()) {
        try {
          Thread.sleep(wait);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
      int failing = failingWith;
      if (failing != 0) {
        calls.add(new Call(ex.getRequestMethod(), path, "HTTP " + failing, Map.of(), List.of()));
        byte[] page = "<html><body>Service Unavailable</body></html>".getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(failing, page.length);
        ex.getResponseBody().write(page);
        return;
      }
      Map<String, String> query = form(Optional.ofNullable(ex.getRequestURI().getRawQuery()).orElse(""));
      String[] reply;
      if (path.startsWith("/cgi-bin/")) {
        Map<String, String> params = new LinkedHashMap<>(query);
        if (!body.isEmpty()) {
          params.putAll(form(body)); // the CGIs merge the query string and the body
        }
        for (String k : query.keySet()) {
          if (k.equals("pwd") || k.toLowerCase(Locale.ROOT).contains("passwd")) {
            violations.add("a secret (" + k + ") was sent in the URL of " + path);
          }
        }
        String func = params.getOrDefault("func", path.substring(path.lastIndexOf('/') + 1));
        calls.add(new Call(ex.getRequestMethod(), path, func, Map.copyOf(params), List.copyOf(query.keySet())));
        reply = cgi(path, func, params);
      } else if (path.startsWith("/api/") && flavour == Flavour.HERO) {
        String key = ex.getRequestMethod() + " " + path;
        Map<String, String> params = new LinkedHashMap<>();
        if (!body.isEmpty()) {
          Object parsed = Json.parse(body);
          if (parsed instanceof Map<?, ?> m) {
            m.forEach((k, v) -> params.put(String.valueOf(k), Json.write(v).replaceAll("^\"|\"$", "")));
          }
        }
        calls.add(new Call(ex.getRequestMethod(), path, key, Map.copyOf(params), List.copyOf(query.keySet())));
        reply = rest(ex.getRequestMethod(), path, Optional.ofNullable(ex.getRequestHeaders().getFirst("sid")).orElse(""),
            params);
      } else {
        reply = new String[] {"404", "not found"};
      }
      byte[] out = reply[1].getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().set("Content-Type", path.startsWith("/api/") ? "application/json" : "text/xml");
      ex.sendResponseHeaders(Integer.parseInt(reply[0]), out.length == 0 ? -1 : out.length);
      if (out.length > 0) {
        ex.getResponseBody().write(out);
      }
    } catch (RuntimeException e) {
      violations.add("simulator failure: " + e);
      throw e;
    }
  }

  private static Map<String, String> form(String raw) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String pair : raw.split("&", -1)) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String k = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
      String v = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      out.put(k, v);
    }
    return out;
  }

  private synchronized Optional<String[]> injectedHttp(String func) {
    List<Integer> l = injectedHttp.get(func);
    if (l == null || l.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new String[] {Integer.toString(l.removeFirst()), "<html>error</html>"});
  }

  private synchronized Optional<Integer> injected(String func) {
    List<Integer> l = injected.get(func);
    return l == null || l.isEmpty() ? Optional.empty() : Optional.of(l.removeFirst());
  }

  // ---- CGI ---------------------------------------------------------------------------------------

  private static String x(String name, Object value) {
    return "<" + name + "><![CDATA[" + value + "]]></" + name + ">";
  }

  private String doc(String inner) {
    return multiRoot ? inner : "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<QDocRoot version=\"1.0\">" + inner
        + "</QDocRoot>";
  }

  private String[] ok(String inner) {
    return new String[] {"200", doc(inner)};
  }

  private String[] result(long r) {
    return ok(x("authPassed", 1) + x("result", r));
  }

  private String iqn(TargetRow t) {
    String iqn = IQN_PREFIX + t.name + IQN_POSTFIX;
    return whitespaceIqn ? "\n      " + iqn + "\n    " : iqn;
  }

  private synchronized String[] cgi(String path, String func, Map<String, String> p) {
    Optional<String[]> http = injectedHttp(func);
    if (http.isPresent()) {
      return http.get();
    }
    if (path.endsWith("/authLogin.cgi")) {
      return login(p);
    }
    if (path.endsWith("/authLogout.cgi")) {
      sessions.remove(p.getOrDefault("sid", ""));
      return ok(x("result", 0));
    }
    if (!live(p.getOrDefault("sid", ""))) {
      return ok(x("authPassed", 0));
    }
    Optional<Integer> inj = injected(func);
    if (inj.isPresent()) {
      return result(inj.get());
    }
    boolean write = !func.equals("extra_get") && !func.equals("get_return");
    if (write && cgiWritesRefused && !path.endsWith("/snapshot.cgi")) {
      return result(-1); // QuTS hero h6.0.1 refused CGI writes (S5)
    }
    return switch (path) {
      case CgiApi.PORTAL -> portal(p);
      case CgiApi.LUN -> lunCgi(func, p);
      case CgiApi.TARGET -> targetCgi(func, p);
      case CgiApi.SNAPSHOT -> snapshotCgi(func, p);
      case CgiApi.DISK -> disk(p);
      default -> new String[] {"404", "no such CGI"};
    };
  }

  private boolean live(String sid) {
    Instant end = sessions.get(sid);
    if (end != null && !Instant.now().isBefore(end)) {
      sessions.remove(sid);
      return false;
    }
    return end != null;
  }

  private String[] login(Map<String, String> p) {
    if (!p.containsKey("user")) {
      if (p.containsKey("sid") && !live(p.get("sid"))) {
        return ok(x("authPassed", 0));
      }
      return ok(x("authPassed", p.containsKey("sid") ? 1 : 0) + "<model>" + x("displayModelName", "TS-873A")
          + x("internalModelName", "TS-X73A") + "</model><firmware>" + x("version", flavour == Flavour.HERO ? "h5.1.0" : "5.1.0")
          + x("build", "20231120") + "</firmware>" + x("hostname", "nas") + x("storage_v2", 1)
          + x("is_zfs", flavour == Flavour.HERO ? 1 : 0));
    }
    logins++;
    String pwd;
    try {
      pwd = new String(Base64.getDecoder().decode(p.getOrDefault("pwd", "")), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      pwd = "";
    }
    if (failedLogins >= lockoutAfter || !USER.equals(p.get("user")) || !PASSWORD.equals(pwd)) {
      failedLogins++;
      return ok(x("authPassed", 0) + x("errorValue", -1));
    }
    failedLogins = 0;
    String sid = UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    sessions.put(sid, Instant.now().plus(sessionTtl));
    return ok(x("authPassed", 1) + x("authSid", sid) + x("isAdmin", 1));
  }

  /** Advances every asynchronous LUN state by one read. */
  private void tickLuns() {
    for (LunRow l : List.copyOf(luns.values())) {
      if (l.creatingLeft > 0 && --l.creatingLeft == 0) {
        // An NAA type 6 id, unique per LUN ever made (a LUN re-made under a reused name is another LUN),
        // under the OUI Linux's LIO target uses: a guest's LIO target then reports exactly this id
        // (the 25 hex digits after the OUI being its unit serial), and the LUN's WWID is 3 + this.
        l.naa = "6001405" + UUID.randomUUID().toString().replace("-", "").substring(0, 25);
        listener.lunCreated(l.index, l.name, l.bytes, l.naa);
      }
      if (l.resizeLeft > 0 && --l.resizeLeft == 0) {
        l.bytes = l.resizeTo;
        listener.lunResized(l.index, l.bytes);
      }
      if (l.removingLeft > 0 && --l.removingLeft == 0) {
        l.ghost = true;
        l.name = "";
        l.bytes = 0;
        l.removingLeft = -1;
        l.mappings.clear();
        l.volumeId = "";
        listener.lunDeleted(l.index);
      }
    }
  }

  private String lunFields(LunRow l) {
    long status = l.ghost ? -2 : l.creatingLeft > 0 ? 0 : 1;
    return x("LUNIndex", l.index) + x("LUNName", l.name) + x("LUNPath", l.name) + x("LUNCapacity", l.bytes / GIB)
        + x("capacity_bytes", l.bytes) + x("LUNStatus", status) + x("LUNEnable", 1)
        + x("LUNThinAllocate", l.thin ? 1 : 0) + x("isRemoving", l.removingLeft > 0 ? 1 : 0)
        + x("bMap", l.mappings.isEmpty() ? 0 : 1) + x("LUNSerialNum", l.ghost ? "" : "sn" + l.index)
        + x("LUNNAA", whitespaceIqn && !l.naa.isEmpty() ? l.naa + "\n  " : l.naa) + x("LUNSectorSize", 512)
        + x("poolID", l.pool) + x("snapshot_count", snaps.values().stream().filter(s -> s.lun == l.index).count());
  }

  private String lunTargets(LunRow l) {
    StringBuilder b = new StringBuilder("<LUNTargetList>");
    l.mappings.forEach((t, n) -> b.append("<row>").append(x("targetIndex", t)).append(x("LUNNumber", n))
        .append(x("LUNEnable", 1)).append("</row>"));
    return b.append("</LUNTargetList>").toString();
  }

  private String[] portal(Map<String, String> p) {
    if (p.containsKey("lunList")) {
      tickLuns();
      StringBuilder b = new StringBuilder("<iSCSILUNList>");
      for (LunRow l : luns.values()) {
        b.append("<LUNInfo>").append(lunFields(l)).append(lunTargets(l)).append("</LUNInfo>");
      }
      return ok(x("authPassed", 1) + b.append("</iSCSILUNList>") + x("result", 0));
    }
    if (p.containsKey("lun_info")) {
      tickLuns();
      int i = intParam(p, "lunID");
      LunRow l = luns.get(i);
      if (l == null) {
        // a never-used or freed index answers a ghost row, as QuTScloud does (S1)
        LunRow ghost = new LunRow();
        ghost.index = i;
        ghost.name = "";
        ghost.ghost = true;
        return ok(x("authPassed", 1) + "<LUNInfo><row>" + lunFields(ghost) + "</row></LUNInfo>" + x("result", 0));
      }
      return ok(x("authPassed", 1) + "<LUNInfo><row>" + lunFields(l) + "</row></LUNInfo>" + lunTargets(l)
          + x("result", 0));
    }
    if (p.containsKey("targetList")) {
      StringBuilder b = new StringBuilder("<iSCSITargetList>");
      for (TargetRow t : targets.values()) {
        b.append("<targetInfo>").append(targetFields(t)).append("</targetInfo>");
      }
      return ok(x("authPassed", 1) + b.append("</iSCSITargetList>") + x("result", 0));
    }
    if (p.containsKey("targetInfo")) {
      TargetRow t = targets.get(intParam(p, "targetIndex"));
      if (t == null) {
        return result(-6);
      }
      StringBuilder acl = new StringBuilder("<targetACL><targetInitInfo>").append(x("initiatorIndex", 0))
          .append(x("initiatorIQN", "")).append(x("initiatorAlias", "Default Policy"))
          .append(x("bCHAPEnable", t.defaultChap.isPresent() ? 1 : 0))
          .append(x("bMutualCHAPEnable", t.defaultChap.flatMap(QnapApi.Chap::mutualUser).isPresent() ? 1 : 0))
          .append(defaultPolicyHidden ? "" : x("accessMode", t.defaultAccess)).append("</targetInitInfo>");
      int n = 1;
      for (var e : t.acl.entrySet()) {
        acl.append("<targetInitInfo>").append(x("initiatorIndex", n++)).append(x("initiatorIQN", e.getKey()))
            .append(x("initiatorAlias", "caravan")).append(x("bCHAPEnable", e.getValue().isPresent() ? 1 : 0))
            .append(x("bMutualCHAPEnable", e.getValue().flatMap(QnapApi.Chap::mutualUser).isPresent() ? 1 : 0))
            .append("</targetInitInfo>");
      }
      acl.append("</targetACL>");
      return ok(x("authPassed", 1) + "<targetInfo><row>" + targetFields(t) + x("bTargetDataDigest", 0)
          + x("bTargetHeaderDigest", 0) + acl + "</row></targetInfo>" + x("result", 0));
    }
    if (p.containsKey("iSCSI_portal")) {
      return ok(x("authPassed", 1) + "<iSCSIPortal>" + x("servicePort", 3260) + x("targetIQNPrefix", IQN_PREFIX)
          + x("targetIQNPostfix", IQN_POSTFIX) + x("bServiceEnable", 1) + x("maxLUNCnt", 256) + x("maxTargetCnt", 256)
          + x("maxISCSILunSize", maxLunBytes / GIB) + "</iSCSIPortal>" + x("result", 0));
    }
    return result(-13);
  }

  private String targetFields(TargetRow t) {
    StringBuilder l = new StringBuilder("<targetLUNList>").append(x("targetLUNListCnt", t.luns.size()));
    t.luns.forEach(i -> l.append(x("LUNIndex", i)));
    l.append("</targetLUNList>");
    return x("targetIndex", t.index) + x("targetName", t.name) + "<targetIQN active=\"1\"><![CDATA[" + iqn(t)
        + "]]></targetIQN>" + x("targetAlias", t.alias) + x("targetStatus", 0) + l;
  }

  private static int intParam(Map<String, String> p, String key) {
    try {
      return Integer.parseInt(p.getOrDefault(key, "").strip());
    } catch (NumberFormatException e) {
      return Integer.MIN_VALUE;
    }
  }

  private static <T> int lowestFree(Map<Integer, T> m, java.util.function.Predicate<T> reusable) {
    int i = 0;
    while (m.containsKey(i) && !reusable.test(m.get(i))) {
      i++;
    }
    return i;
  }

  private LunRow newLun(String name, long bytes, boolean thin, int pool) {
    if (luns.values().stream().anyMatch(l -> name.equals(l.name))) {
      violations.add("a second LUN named " + name + " (S3: duplicate names corrupt the appliance's state)");
    }
    LunRow l = new LunRow();
    l.index = lowestFree(luns, r -> r.ghost); // indices are reused, ghosts included
    l.name = name;
    l.bytes = bytes;
    l.thin = thin;
    l.pool = pool;
    l.creatingLeft = Math.max(1, creatingReads);
    l.volumeId = Long.toString(nextVolume++);
    luns.put(l.index, l);
    return l;
  }

  private long free(int pool) {
    long used = luns.values().stream().filter(l -> !l.ghost && !l.thin && l.pool == pool).mapToLong(l -> l.bytes).sum();
    return pools.getOrDefault(pool, 0L) - used;
  }

  private String[] lunCgi(String func, Map<String, String> p) {
    switch (func) {
      case "add_lun" -> {
        String name = p.getOrDefault("LUNName", "");
        int pool = intParam(p, "poolID");
        long gib = intParam(p, "LUNCapacity");
        boolean thin = "1".equals(p.get("LUNThinAllocate"));
        if (!"no".equals(p.get("FileIO")) || name.isEmpty() || !name.equals(p.get("LUNPath")) || gib <= 0
            || !pools.containsKey(pool) || !p.containsKey("LUNThinAllocate")) {
          return result(-13);
        }
        if (gib * GIB > maxLunBytes) {
          return result(-13);
        }
        if (!thin && gib * GIB > free(pool)) {
          return result(-1);
        }
        return result(newLun(name, gib * GIB, thin, pool).index);
      }
      case "edit_lun" -> {
        LunRow l = luns.get(intParam(p, "LUNIndex"));
        for (String k : List.of("LUNName", "LUNPath", "LUNCapacity", "LUNThinAllocate", "LUNStatus", "lv_ifssd")) {
          if (!p.containsKey(k)) {
            violations.add("edit_lun without the full description (missing " + k + ")");
            return result(-13);
          }
        }
        if (l == null || l.ghost || l.removingLeft > 0) {
          return result(-6);
        }
        if (!l.name.equals(p.get("LUNName"))) {
          violations.add("edit_lun of index " + l.index + " named " + p.get("LUNName") + ", which holds " + l.name);
          return result(-13);
        }
        long bytes = intParam(p, "LUNCapacity") * GIB;
        if (bytes < l.bytes) {
          return result(-13);
        }
        l.resizeTo = bytes;
        l.resizeLeft = Math.max(1, resizeReads);
        return result(0);
      }
      case "remove_lun" -> {
        LunRow l = luns.get(intParam(p, "LUNIndex"));
        if (l == null || l.ghost) {
          return result(-1); // remove_lun on a ghost index returns -1 (S1, S5)
        }
        if (!l.mappings.isEmpty()) {
          return result(-14);
        }
        if (l.removingLeft > 0) {
          return result(-1);
        }
        l.removingLeft = Math.max(1, removingReads);
        snaps.values().removeIf(s -> s.lun == l.index);
        return result(0);
      }
      default -> {
        return result(-13);
      }
    }
  }

  private Optional<TargetRow> targetOf(Map<String, String> p) {
    TargetRow t = targets.get(intParam(p, "targetIndex"));
    if (t == null && p.containsKey("targetIQN")) {
      String iqn = p.get("targetIQN").strip();
      t = targets.values().stream().filter(x -> (IQN_PREFIX + x.name + IQN_POSTFIX).equals(iqn)).findFirst().orElse(null);
    }
    return Optional.ofNullable(t);
  }

  private String[] targetCgi(String func, Map<String, String> p) {
    switch (func) {
      case "add_target" -> {
        String name = p.getOrDefault("targetName", "");
        if (!name.matches("[a-z0-9][a-z0-9.-]{0,62}") || targets.values().stream().anyMatch(t -> t.name.equals(name))) {
          return result(-13);
        }
        TargetRow t = new TargetRow();
        t.index = lowestFree(targets, r -> false);
        t.name = name;
        t.alias = p.getOrDefault("targetAlias", name);
        targets.put(t.index, t);
        listener.targetCreated(t.index, IQN_PREFIX + name + IQN_POSTFIX);
        listener.defaultPolicyChanged(t.index, true); // the factory Default Policy admits every initiator
        return result(t.index);
      }
      case "remove_target" -> {
        TargetRow t = targets.get(intParam(p, "targetIndex"));
        if (t == null) {
          return result(-6);
        }
        if (!t.luns.isEmpty()) {
          violations.add("remove_target of " + t.name + " while LUNs " + t.luns + " are mapped to it");
          return result(-14);
        }
        targets.remove(t.index);
        listener.targetDeleted(t.index);
        return result(0);
      }
      case "add_lun" -> {
        Optional<TargetRow> t = targetOf(p);
        LunRow l = luns.get(intParam(p, "LUNIndex"));
        if (t.isEmpty() || l == null || l.ghost || l.removingLeft > 0) {
          return result(-6);
        }
        if (l.mappings.containsKey(t.get().index)) {
          return result(-17);
        }
        int number = 0;
        while (l.mappings.containsValue(number) || lunNumberUsed(t.get(), number)) {
          number++;
        }
        l.mappings.put(t.get().index, number);
        t.get().luns.add(l.index);
        listener.lunMapped(t.get().index, l.index, number);
        return result(t.get().index);
      }
      case "remove_lun" -> {
        Optional<TargetRow> t = targetOf(p);
        LunRow l = luns.get(intParam(p, "LUNIndex"));
        if (t.isEmpty() || l == null || !l.mappings.containsKey(t.get().index)) {
          return result(-6);
        }
        l.mappings.remove(t.get().index);
        t.get().luns.remove(Integer.valueOf(l.index));
        listener.lunUnmapped(t.get().index, l.index);
        return result(0);
      }
      case "add_init", "edit_init" -> {
        Optional<TargetRow> t = targetOf(p);
        String init = p.getOrDefault("initiatorIQN", "").strip();
        if (t.isEmpty()) {
          return result(-6);
        }
        if (init.isEmpty() && "0".equals(p.get("initiatorIndex"))) {
          return defaultRow(t.get(), p);
        }
        if (init.isEmpty()) {
          return result(-13);
        }
        Optional<QnapApi.Chap> chap = Optional.empty();
        if ("1".equals(p.get("bCHAPEnable"))) {
          if (p.getOrDefault("CHAPUserName", "").isEmpty() || p.getOrDefault("CHAPPasswd", "").isEmpty()) {
            return result(-13);
          }
          boolean mutual = "1".equals(p.get("bMutualCHAPEnable"));
          chap = Optional.of(new QnapApi.Chap(p.get("CHAPUserName"), p.get("CHAPPasswd"),
              mutual ? Optional.of(p.getOrDefault("mutualCHAPUserName", "")) : Optional.empty(),
              mutual ? Optional.of(p.getOrDefault("mutualCHAPPasswd", "")) : Optional.empty()));
        }
        if (func.equals("add_init") && t.get().acl.containsKey(init)) {
          return result(-17);
        }
        t.get().acl.put(init, chap);
        listener.aclChanged(t.get().index, Map.copyOf(t.get().acl));
        return result(0);
      }
      case "remove_init" -> {
        Optional<TargetRow> t = targetOf(p);
        String init = p.getOrDefault("initiatorIQN", "").strip();
        if (t.isEmpty() || t.get().acl.remove(init) == null) {
          return result(-6);
        }
        listener.aclChanged(t.get().index, Map.copyOf(t.get().acl));
        return result(0);
      }
      default -> {
        return result(-13);
      }
    }
  }

  /** add_init/edit_init of row 0, the Default Policy: its CHAP (S3, S5) and its access mode. */
  private String[] defaultRow(TargetRow t, Map<String, String> p) {
    Optional<QnapApi.Chap> chap = Optional.empty();
    if ("1".equals(p.get("bCHAPEnable"))) {
      if (p.getOrDefault("CHAPUserName", "").isEmpty() || p.getOrDefault("CHAPPasswd", "").isEmpty()) {
        return result(-13);
      }
      chap = Optional.of(new QnapApi.Chap(p.get("CHAPUserName"), p.get("CHAPPasswd"), Optional.empty(),
          Optional.empty()));
    }
    if (p.containsKey("accessMode")) {
      int access = intParam(p, "accessMode");
      if (access != READ_WRITE && access != READ_ONLY && access != DENY) {
        return result(-13);
      }
      t.defaultAccess = access;
      listener.defaultPolicyChanged(t.index, access != DENY);
    }
    t.defaultChap = chap;
    return result(0);
  }

  private boolean lunNumberUsed(TargetRow t, int number) {
    return t.luns.stream().map(luns::get).anyMatch(l -> l != null && Integer.valueOf(number).equals(l.mappings.get(t.index)));
  }

  private void tickSnapshots() {
    for (SnapRow s : List.copyOf(snaps.values())) {
      if (s.readyLeft > 0) {
        s.readyLeft--;
      }
      if (s.deletingLeft > 0 && --s.deletingLeft == 0) {
        snaps.remove(s.id);
        listener.snapshotDeleted(s.lun, s.id);
      }
    }
  }

  private String[] snapshotCgi(String func, Map<String, String> p) {
    switch (func) {
      case "extra_get" -> {
        tickSnapshots();
        int lun = intParam(p, "LUNIndex");
        LunRow l = luns.get(lun);
        if (l == null || l.ghost) {
          return result(-200005);
        }
        int start = Math.max(0, intParam(p, "snap_start"));
        int count = intParam(p, "snap_count") <= 0 ? 100 : intParam(p, "snap_count");
        List<SnapRow> rows = snaps.values().stream().filter(s -> s.lun == lun).skip(start).limit(count).toList();
        StringBuilder b = new StringBuilder("<SnapshotList>");
        for (SnapRow s : rows) {
          b.append("<row>").append(x("snapshot_id", s.id)).append(x("snapshot_name", s.name))
              .append(x("create_time", ANSI_C.format(s.created)))
              .append(x("status", s.deletingLeft > 0 ? -1 : s.readyLeft > 0 ? 0 : 1)).append("</row>");
        }
        return ok(x("authPassed", 1) + b.append("</SnapshotList>") + x("result", 0));
      }
      case "create_snapshot" -> {
        LunRow l = luns.get(intParam(p, "lunID"));
        String name = p.getOrDefault("snapshot_name", "");
        if (l == null || l.ghost || l.removingLeft > 0) {
          return result(-200005);
        }
        if (name.isEmpty() || !"0".equals(p.get("expire_min"))) {
          violations.add("create_snapshot without expire_min=0: the snapshot would vanish (S6)");
          return result(-13);
        }
        return result(newSnapshot(l, name).id);
      }
      case "del_snapshot", "del_snapshots" -> {
        SnapRow s = snaps.get((long) intParam(p, "snapshotID"));
        if (s == null || s.deletingLeft > 0) {
          return result(-206021);
        }
        if (luns.values().stream().anyMatch(l -> l.instantOrigin == s.id && !l.ghost)) {
          return result(-618);
        }
        s.deletingLeft = Math.max(1, snapshotReads);
        return result(0);
      }
      case "clone_qsnapshot", "instant_clone_qsnapshot" -> {
        boolean instant = func.startsWith("instant");
        if (instant && flavour != Flavour.HERO) {
          return result(-13);
        }
        SnapRow s = snaps.get((long) intParam(p, "snapshotID"));
        String name = p.getOrDefault("new_name", "");
        if (!"1".equals(p.get("by_lun")) || s == null || s.deletingLeft > 0 || name.isEmpty()) {
          return result(s == null ? -206021 : -13);
        }
        if (fork != null) {
          violations.add("a second fork while get_return still reports the first");
          return result(-1);
        }
        LunRow source = luns.get(s.lun);
        int pool = p.containsKey("poolID") ? intParam(p, "poolID") : source.pool;
        fork = new Fork(Math.max(1, forkReads), 0, () -> {
          LunRow l = newLun(name, source.bytes, source.thin, pool);
          l.instantOrigin = instant ? s.id : -1;
          listener.lunCloned(l.index, source.index, s.id);
        });
        return ok(x("authPassed", 1) + x("fork", 1));
      }
      case "get_return" -> {
        if (fork == null) {
          return ok(x("authPassed", 1) + x("processing", 0) + x("result", 0));
        }
        if (fork.left() > 1) {
          fork = new Fork(fork.left() - 1, fork.result(), fork.finish());
          return ok(x("authPassed", 1) + x("processing", 1));
        }
        Fork done = fork;
        fork = null;
        done.finish().run();
        return ok(x("authPassed", 1) + x("processing", 0) + x("result", done.result()));
      }
      default -> {
        return result(-13);
      }
    }
  }

  private SnapRow newSnapshot(LunRow l, String name) {
    SnapRow s = new SnapRow();
    s.id = nextSnapshot++;
    s.lun = l.index;
    s.name = name;
    s.created = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
    s.readyLeft = Math.max(0, snapshotReads);
    snaps.put(s.id, s);
    listener.snapshotTaken(l.index, s.id);
    return s;
  }

  private String[] disk(Map<String, String> p) {
    if (!"poolInfo".equals(p.get("store"))) {
      return result(-13);
    }
    int id = intParam(p, "poolID");
    if (!pools.containsKey(id)) {
      return ok(x("authPassed", 1) + "<Pool_Index></Pool_Index>" + x("result", -6));
    }
    long cap = pools.get(id);
    long free = free(id);
    return ok(x("authPassed", 1) + "<DiskManageModel/><Pool_Index><row>" + x("poolID", id) + x("capacity_bytes", cap)
        + x("allocated_bytes", cap - free) + x("freesize_bytes", free) + x("real_freesize_bytes", free)
        + x("max_thick_create_size_bytes", free) + x("pool_status", 0) + x("pool_capacity", cap / GIB + " GB")
        + "</row></Pool_Index>" + x("result", 0));
  }

  // ---- REST (hero) ------------------------------------------------------------------------------

  private static final Pattern VOLUME = Pattern.compile("/api/storage/v1/volumes/([0-9]+)");
  private static final Pattern RESHAPE = Pattern.compile("/api/storage/v1/volumes/([0-9]+)/reshaping");
  private static final Pattern TARGET = Pattern.compile("/api/iscsi/v1/targets/([0-9]+)");
  private static final Pattern MAP = Pattern.compile("/api/iscsi/v1/targets/([0-9]+)/luns/([0-9]+)");
  private static final Pattern VOLUME_SNAPS = Pattern.compile("/api/snapmgr/v1/volumes/([0-9]+)/snapshots");
  private static final Pattern SNAP = Pattern.compile("/api/snapmgr/v1/snapshots/([0-9]+)");

  private static String[] json(long code, String words, Map<String, Object> extra) {
    Map<String, Object> m = new LinkedHashMap<>(extra);
    m.put("error_code", code);
    m.put("error_message", words);
    return new String[] {"200", Json.write(m)};
  }

  private static String[] success(Map<String, Object> extra) {
    return json(0, "Success", extra);
  }

  private Optional<LunRow> byVolume(String id) {
    return luns.values().stream().filter(l -> id.equals(l.volumeId) && !l.ghost).findFirst();
  }

  private synchronized String[] rest(String method, String path, String sid, Map<String, String> p) {
    String key = method + " " + path;
    Optional<String[]> http = injectedHttp(key);
    if (http.isPresent()) {
      return http.get();
    }
    if (!live(sid)) {
      return json(-22, "sid is invalid", Map.of());
    }
    Optional<Integer> inj = injected(key);
    if (inj.isPresent()) {
      return json(inj.get(), "injected failure", Map.of());
    }
    Matcher reshape = RESHAPE.matcher(path);
    Matcher volume = VOLUME.matcher(path);
    Matcher map = MAP.matcher(path);
    Matcher target = TARGET.matcher(path);
    Matcher volumeSnaps = VOLUME_SNAPS.matcher(path);
    Matcher snap = SNAP.matcher(path);
    if (method.equals("GET") && path.equals("/api/storage/v1/volumes")) {
      tickLuns();
      List<Object> out = new ArrayList<>();
      for (LunRow l : luns.values()) {
        if (!l.ghost) {
          Map<String, Object> v = new LinkedHashMap<>();
          v.put("id", l.volumeId);
          v.put("label", l.name);
          v.put("volume_type", 3);
          v.put("capacity", l.bytes);
          v.put("pool_id", l.pool);
          v.put("provision_type", l.thin ? "thin" : "thick");
          v.put("creating", l.creatingLeft > 0);
          v.put("deleting", l.removingLeft > 0);
          v.put("lun_index", l.creatingLeft > 0 ? -1 : l.index);
          out.add(v);
        }
      }
      return success(Map.of("volumes", out));
    }
    if (method.equals("POST") && path.equals("/api/storage/v1/volumes")) {
      String name = p.getOrDefault("label", "");
      long bytes;
      int pool;
      try {
        bytes = Long.parseLong(p.getOrDefault("capacity", ""));
        pool = Integer.parseInt(p.getOrDefault("pool_id", ""));
      } catch (NumberFormatException e) {
        return json(-13, "invalid parameter", Map.of());
      }
      boolean thin = "thin".equals(p.get("provision_type"));
      if (name.isEmpty() || bytes <= 0 || bytes % GIB != 0 || !pools.containsKey(pool) || !"zvol".equals(p.get("type"))
          || !p.getOrDefault("iscsi", "").contains("create_lun")) {
        return json(-13, "invalid parameter", Map.of());
      }
      if (!thin && bytes > free(pool)) {
        return json(-1, "not enough free space", Map.of());
      }
      LunRow l = newLun(name, bytes, thin, pool);
      return success(Map.of("single", Map.of("id", l.volumeId)));
    }
    if (method.equals("PUT") && reshape.matches()) {
      Matcher m = reshape;
      Optional<LunRow> l = byVolume(m.group(1));
      long bytes = Long.parseLong(p.getOrDefault("capacity", "0"));
      if (l.isEmpty()) {
        return json(-29, "no such volume", Map.of());
      }
      if (bytes < l.get().bytes) {
        return json(-13, "cannot shrink", Map.of());
      }
      l.get().resizeTo = bytes;
      l.get().resizeLeft = Math.max(1, resizeReads);
      return success(Map.of());
    }
    if (method.equals("DELETE") && volume.matches()) {
      Matcher m = volume;
      Optional<LunRow> l = byVolume(m.group(1));
      if (l.isEmpty() || l.get().removingLeft > 0) {
        return json(-29, "no such volume", Map.of());
      }
      if (!l.get().mappings.isEmpty()) {
        return json(-14, "LUN is still mapped", Map.of());
      }
      if (snaps.values().stream().anyMatch(s -> s.lun == l.get().index)) {
        return json(-618, "volume has snapshots", Map.of());
      }
      l.get().removingLeft = Math.max(1, removingReads);
      return success(Map.of());
    }
    if (method.equals("GET") && path.equals("/api/iscsi/v1/luns")) {
      tickLuns();
      List<Object> out = new ArrayList<>();
      for (LunRow l : luns.values()) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("index", l.index);
        v.put("name", l.name);
        v.put("volume_id", l.volumeId == null ? "" : l.volumeId);
        v.put("naa", l.naa);
        v.put("removing", l.removingLeft > 0);
        List<Object> maps = new ArrayList<>();
        l.mappings.forEach((t, n) -> maps.add(Map.of("target_index", t, "lun_number", n)));
        v.put("targets", maps);
        out.add(v);
      }
      return success(Map.of("luns", out));
    }
    if (method.equals("GET") && path.equals("/api/iscsi/v1/targets")) {
      List<Object> out = new ArrayList<>();
      for (TargetRow t : targets.values()) {
        out.add(Map.of("index", t.index, "name", t.name, "alias", t.alias, "iqn", iqn(t), "lun_indexes", List.copyOf(t.luns)));
      }
      return success(Map.of("targets", out));
    }
    if (method.equals("POST") && path.equals("/api/iscsi/v1/targets")) {
      String[] r = targetCgi("add_target", Map.of("targetName", p.getOrDefault("name", ""), "targetAlias",
          p.getOrDefault("alias", "")));
      long idx = Long.parseLong(r[1].replaceAll("(?s).*<result><!\\[CDATA\\[(-?[0-9]+)]]></result>.*", "$1"));
      return idx < 0 ? json(idx, "cannot create target", Map.of()) : success(Map.of("single", Map.of("index", idx)));
    }
    if (map.matches() && (method.equals("POST") || method.equals("DELETE"))) {
      Matcher m = map;
      String[] r = targetCgi(method.equals("POST") ? "add_lun" : "remove_lun",
          Map.of("targetIndex", m.group(1), "LUNIndex", m.group(2)));
      long code = Long.parseLong(r[1].replaceAll("(?s).*<result><!\\[CDATA\\[(-?[0-9]+)]]></result>.*", "$1"));
      return code < 0 ? json(code, "mapping failed", Map.of()) : success(Map.of());
    }
    if (method.equals("DELETE") && target.matches()) {
      Matcher m = target;
      String[] r = targetCgi("remove_target", Map.of("targetIndex", m.group(1)));
      long code = Long.parseLong(r[1].replaceAll("(?s).*<result><!\\[CDATA\\[(-?[0-9]+)]]></result>.*", "$1"));
      return code < 0 ? json(code, "cannot delete target", Map.of()) : success(Map.of());
    }
    if (volumeSnaps.matches()) {
      Matcher m = volumeSnaps;
      Optional<LunRow> l = byVolume(m.group(1));
      if (l.isEmpty()) {
        return json(-29, "no such volume", Map.of());
      }
      if (method.equals("POST")) {
        if (!"0".equals(p.get("expire_min"))) {
          violations.add("snapshot without expire_min=0: it would vanish (S6)");
          return json(-13, "invalid parameter", Map.of());
        }
        return success(Map.of("single", Map.of("id", newSnapshot(l.get(), p.getOrDefault("name", "")).id)));
      }
      tickSnapshots();
      List<Object> out = new ArrayList<>();
      snaps.values().stream().filter(s -> s.lun == l.get().index).forEach(s -> out.add(Map.of("id", s.id, "name", s.name,
          "created", s.created.getEpochSecond(), "status", s.deletingLeft > 0 ? "deleting" : s.readyLeft > 0 ? "creating"
              : "ready")));
      return success(Map.of("snapshots", out));
    }
    if (method.equals("DELETE") && snap.matches()) {
      Matcher m = snap;
      String[] r = snapshotCgi("del_snapshot", Map.of("snapshotID", m.group(1)));
      long code = Long.parseLong(r[1].replaceAll("(?s).*<result><!\\[CDATA\\[(-?[0-9]+)]]></result>.*", "$1"));
      return code < 0 ? json(code, QnapErrors.meaning(code), Map.of()) : success(Map.of());
    }
    return new String[] {"404", Json.write(Map.of("error_code", -404, "error_message", "no such API"))};
  }

  /** An unchecked wrapper for the few IO calls tests make on the simulator. */
  static QnapSimulator start(Flavour flavour) {
    try {
      return new QnapSimulator(flavour);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

package dev.caravan.benchmarks.harness;

import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Node RPC latency of a real {@code caravan serve} process (started through {@code bin/caravan}, file
 * backend, real loop devices and mounts) over its real unix socket, through a real grpc-java client,
 * one call at a time, as Nomad makes them.
 *
 * <p>Why not JMH: publish and unpublish (and stage and unstage) are a pair of states. Timing one with
 * the other in a {@code @Setup(Level.Invocation)} is what JMH warns against (the setup's cost and its
 * timestamps leak into short measurements), and timing the pair hides which half is slow. Here each
 * iteration makes both calls and times each one on its own with {@link System#nanoTime()}, so every
 * call starts from the state it is meant for. Each phase runs {@code --warmup} untimed iterations
 * first (the server's JIT and the client's), then {@code --iterations} timed ones; percentiles are
 * exact over all timed calls.
 *
 * <p>Phases: {@code interleaved} (all of the below but stage in one loop, see {@link #interleaved}; what
 * the gate runs), publish/unpublish pairs (a fresh Nomad-style per-alloc target each time, parent
 * directory made untimed, as Nomad makes it), NodeGetVolumeStats on a published target, stage/unstage
 * cycles of an already formatted volume, and for comparison the same publish through {@code mount
 * --bind} / {@code umount} run by host-storage's ToolRunner (the shell-out peers use) and through
 * host-storage's {@code Mounts.bind}/{@code unmount} called in this process (the floor: the mount-point
 * check, statx where the kernel has the mount id, and the syscall; no RPC and no journal).
 *
 * <p>In one run: {@code --jar a.jar,b.jar} serves each jar in turn (a fresh server, work directory and
 * volumes each), phase for phase, so a before and an after are measured side by side under the same
 * load; {@code --mount-tables 20,1000} repeats everything with the host's mount table filled with
 * unrelated bind mounts up to that many lines ({@link Filler}). The rows, and the ratios of p50s the
 * performance gate compares ({@link Gate}), go to {@code --json FILE}; {@code --gate BASELINE} compares
 * them with a baseline and, while a ratio grew beyond {@code --tolerance} in every run so far,
 * measures everything again, up to {@code --confirm} (2) more times; it exits 1 when one grew beyond it
 * in every run ({@code --confirm 0}: in the one).
 * {@code --median-of a.json,b.json,c.json --json out.json} writes each ratio's median of earlier runs.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.caravan.benchmarks.harness.NodeLatencyHarness \
 *     [--iterations 2000] [--warmup 500] [--jar csi-server/target/caravan.jar[,other.jar]] [--launcher bin/caravan]
 *     [--mount-tables 20,1000] [--json result.json] [--gate baseline.json [--tolerance 0.6] [--confirm 2]]
 * </pre>
 */
public final class NodeLatencyHarness {
  private static final long MIB = 1L << 20;
  private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(30);
  private static final String USAGE = Ext4Writer.USAGE;
  private static final VolumeCapability CAP = Ext4Writer.CAPABILITY;

  private final int iterations;
  private final int warmup;
  private final Path work;
  private final Path root;
  private NodeGrpc.NodeBlockingStub node;
  private IdentityGrpc.IdentityBlockingStub identity;
  private Path serverLog;
  /** Server-side times (the server's own per-RPC log line, "us="), by operation name. */
  private final List<Samples> serverSide = new ArrayList<>();
  private Footprint footprint;

  private NodeLatencyHarness(int iterations, int warmup, Path work) {
    this.iterations = iterations;
    this.warmup = warmup;
    this.work = work;
    this.root = work.resolve("nomad/csi/monolith/caravan");
  }

  public static void main(String[] args) throws Exception {
    Options o = new Options(args, Map.ofEntries(Map.entry("iterations", "2000"), Map.entry("warmup", "500"),
        Map.entry("launcher", ""), Map.entry("jar", ""), Map.entry("serve-args", ""),
        Map.entry("work-dir", System.getProperty("java.io.tmpdir")),
        Map.entry("phases", "probe,publish,stats,stage,binary,direct"), Map.entry("mount-tables", "0"),
        Map.entry("json", ""), Map.entry("gate", ""), Map.entry("tolerance", String.valueOf(Gate.DEFAULT_TOLERANCE)),
        Map.entry("confirm", "2"), Map.entry("median-of", "")));
    if (!o.get("median-of").isEmpty()) {
      writeMedian(o);
      return;
    }
    Machine.requireRoot();
    Machine.quietClientLogs();
    Run run = measure(o, "");
    List<Gate.Ratio> ratios = run.ratios();
    run.write(o.get("json"));
    if (o.get("gate").isEmpty()) {
      return;
    }
    Path baseline = Path.of(o.get("gate"));
    double tolerance = Double.parseDouble(o.get("tolerance"));
    java.util.Set<String> over = Gate.compare(baseline, ratios, tolerance, System.out);
    // A change in the code slows every run; a neighbour's burst of load, or a server whose JIT made
    // other choices, slows one: single runs spread a ratio by up to 1.9 times on one quiet machine.
    // So a ratio fails only when it is over its limit in every run, made one after the other.
    int runs = 1;
    for (int more = o.integer("confirm"); !over.isEmpty() && runs <= more; runs++) {
      System.out.println();
      System.out.println("performance gate: " + over.size() + " ratio(s) over the limit in " + inRuns(runs)
          + "; measuring once more");
      Run again = measure(o, " (run " + (runs + 1) + ")");
      String json = o.get("json");
      again.write(json.isEmpty() ? "" : json.replaceFirst("(\\.json)?$", "-run" + (runs + 1) + ".json"));
      over.retainAll(Gate.compare(baseline, again.ratios(), tolerance, System.out));
    }
    System.out.println();
    System.out.println(over.isEmpty()
        ? "performance gate: passed" + (runs == 1 ? "" : " (no ratio was over its limit in all " + runs + " runs)")
        : "performance gate: FAILED: over the limit in " + inRuns(runs) + ": "
            + String.join(", ", over) + " (to accept a change on purpose, refresh the baseline as benchmarks/README.md says)");
    if (!over.isEmpty()) {
      System.exit(1);
    }
  }

  /** "this run", or "all N runs": where the gate's messages say a ratio was over its limit. */
  private static String inRuns(int runs) {
    return runs == 1 ? "this run" : "all " + runs + " runs";
  }

  /** One measurement of everything: the starts, then a server per mount table with its calls. */
  private record Run(String machine, String loadBefore, String loadAfter, double seconds, List<Result> results,
      List<Footprint> footprints, Starts starts, List<Gate.Ratio> ratios) {
    /** Writes this run's rows and ratios as JSON to {@code file}; nothing when it is empty. */
    void write(String file) throws IOException {
      if (file.isEmpty()) {
        return;
      }
      Map<String, Object> json = Gate.json(machine, loadBefore, loadAfter, seconds, results, footprints, starts, ratios);
      Files.writeString(Path.of(file), dev.caravan.csi.support.Json.pretty(json) + "\n");
      System.out.println("result written to " + file);
    }
  }

  private static Run measure(Options o, String which) throws Exception {
    String before = Machine.load();
    System.out.println("node latency harness" + which + ": " + Machine.describe() + " (before)");
    long started = System.nanoTime();
    Path base = Files.createTempDirectory(Path.of(o.get("work-dir")), "caravan-bench-node-");
    List<String> phases = List.of(o.get("phases").split(",", -1));
    // --jar a.jar,b.jar: each jar is served in turn, phase for phase, in this one run
    List<String> jars = List.of(o.get("jar").split(",", -1));
    List<Integer> tables = Stream.of(o.get("mount-tables").split(",", -1)).map(Integer::parseInt).toList();
    List<Result> results = new ArrayList<>();
    List<Footprint> footprints = new ArrayList<>();
    Starts starts;
    try (AutoCloseable cleanup = () -> cleanUp(base)) {
      starts = Starts.measure(o.launcher(), base, envFor(jars.getFirst()), o.serveArgs());
    }
    System.out.println("start → Probe ready: " + starts.serverMillis() + " ms; `" + Starts.REFERENCE + "`: "
        + starts.referenceMillis() + " ms (medians of " + Starts.RUNS + ", alternating)");
    try (AutoCloseable cleanup = () -> cleanUp(base)) {
      for (int table : tables) {
        int lines = Filler.fill(base.resolve("filler"), table);
        for (int j = 0; j < jars.size(); j++) {
          String label = jars.size() == 1 ? "" : labelOf(jars.get(j), j);
          Path work = Files.createDirectories(base.resolve("t" + lines + "-s" + j));
          NodeLatencyHarness h = new NodeLatencyHarness(o.integer("iterations"), o.integer("warmup"), work);
          results.addAll(h.run(o, jars.get(j), label, table, lines, phases));
          footprints.add(h.footprint);
        }
      }
    }
    String after = Machine.load();
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.println();
    System.out.println(Result.header());
    results.forEach(r -> System.out.println(r.row()));
    System.out.println();
    System.out.println(Footprint.header());
    footprints.forEach(f -> System.out.println(f.row()));
    List<Gate.Ratio> ratios = Gate.ratios(results, footprints, starts);
    System.out.println();
    System.out.println("Ratios of p50s measured in this run (cost / reference: higher is slower):");
    System.out.println();
    System.out.println(Gate.Ratio.header());
    ratios.forEach(r -> System.out.println(r.row()));
    System.out.println();
    System.out.printf(java.util.Locale.ROOT, "node latency harness%s: load average %s (after), %.0f s in all%n", which,
        after, seconds);
    return new Run(Machine.describe(), before, after, seconds, results, footprints, starts, ratios);
  }

  /**
   * {@code --median-of a.json,b.json,c.json --json out.json}: each ratio's median over the results of
   * separate runs (a baseline's refresh). Separate processes, because a harness that has already run
   * once is warmer on the client side than the gate's single run ever is.
   */
  private static void writeMedian(Options o) throws IOException {
    if (o.get("json").isEmpty()) {
      throw new IllegalArgumentException("--median-of needs --json FILE to write the medians to");
    }
    List<List<Gate.Ratio>> runs = new ArrayList<>();
    List<Object> from = new ArrayList<>();
    for (String file : o.get("median-of").split(",", -1)) {
      Map<?, ?> json = (Map<?, ?>) dev.caravan.csi.support.Json.parse(Files.readString(Path.of(file)));
      runs.add(Gate.ratiosOf(json));
      from.add(Map.of("machine", json.get("machine"), "load_before", json.get("load_before"), "load_after",
          json.get("load_after")));
    }
    Map<String, Object> out = new java.util.LinkedHashMap<>();
    out.put("median_of", from);
    Map<String, Object> ratios = new java.util.LinkedHashMap<>();
    Gate.median(runs).forEach(r -> ratios.put(r.key(), r.value()));
    out.put("ratios", ratios);
    Files.writeString(Path.of(o.get("json")), dev.caravan.csi.support.Json.pretty(out) + "\n");
    System.out.println("each ratio's median of " + runs.size() + " runs written to " + o.get("json"));
  }

  private static Map<String, String> envFor(String jar) {
    Map<String, String> env = new java.util.HashMap<>();
    if (!jar.isEmpty()) {
      env.put("CARAVAN_JAR", Path.of(jar).toAbsolutePath().toString());
    }
    return env;
  }

  private static String labelOf(String jar, int index) {
    return jar.isEmpty() ? "bin/caravan" : index + ":" + Path.of(jar).getFileName();
  }

  /** One server: start it, run the phases against it, stop it; the rows carry its label and table size. */
  private List<Result> run(Options o, String jar, String label, int table, int lines, List<String> phases) throws Exception {
    List<Samples> client = new ArrayList<>();
    Path launcher = o.launcher();
    Map<String, String> env = envFor(jar);
    System.out.println("server " + (label.isEmpty() ? "" : label + " ") + "with " + lines
        + " lines in the mount table: " + launcher + " serve (file backend), data and mounts under " + work);
    Map<String, Long> rss;
    // Resources close in reverse: the server stops first, then the clean-up runs.
    try (ServerProcess server = ServerProcess.start(launcher, work, env, o.serveArgs())) {
      long readyNanos = server.awaitProbeReady(Duration.ofSeconds(60));
      System.out.printf("server pid %d answered Probe ready %.0f ms after start%n", server.pid(), readyNanos / 1e6);
      // Idle: what start-up left behind once its own background work (the JIT's first compilations,
      // the first usage walk) has had a moment, before any call of the run.
      TimeUnit.SECONDS.sleep(IDLE_SETTLE_SECONDS);
      long idleKiB = server.rss().get("VmRSS");
      try (UnixChannel ch = new UnixChannel(server.socket())) {
        node = NodeGrpc.newBlockingStub(ch.channel());
        identity = IdentityGrpc.newBlockingStub(ch.channel());
        serverLog = work.resolve("server.log");
        ControllerGrpc.ControllerBlockingStub controller = ControllerGrpc.newBlockingStub(ch.channel());
        String pub = createVolume(controller, "bench-publish");
        String stg = createVolume(controller, "bench-stage");
        Path staging = stage(pub);
        if (phases.contains("interleaved")) {
          client.addAll(interleaved(pub, staging));
        }
        if (phases.contains("probe")) {
          client.add(probe());
        }
        if (phases.contains("publish")) {
          client.addAll(publishUnpublish(pub, staging));
        }
        if (phases.contains("stats")) {
          client.add(stats(pub, staging));
        }
        if (phases.contains("binary")) {
          client.addAll(bindPairs(BIND_PROCESS, UNBIND_PROCESS, staging, true));
        }
        if (phases.contains("direct")) {
          client.addAll(bindPairs(BIND_FLOOR, UNBIND_FLOOR, staging, false));
        }
        unstage(pub, staging);
        if (phases.contains("stage")) {
          client.addAll(stageCycles(stg));
        }
        TimeUnit.SECONDS.sleep(phases.contains("stage") ? 2 : 0);
        rss = server.rss();
        footprint = new Footprint(label, table, lines, TimeUnit.NANOSECONDS.toMillis(readyNanos), idleKiB,
            rss.get("VmRSS"), callsLogged());
        deleteVolume(controller, pub);
        deleteVolume(controller, stg);
      }
    }
    System.out.println("server memory after the run (KiB): " + rss);
    List<Result> rows = new ArrayList<>();
    client.forEach(c -> rows.add(new Result(label, table, lines, "client", c)));
    serverSide.forEach(c -> rows.add(new Result(label, table, lines, "server", c)));
    return rows;
  }

  private static final int IDLE_SETTLE_SECONDS = 2;
  /** Every call the server answered so far, by its per-RPC log lines. */
  private long callsLogged() throws IOException {
    try (Stream<String> lines = Files.lines(serverLog)) {
      return lines.filter(l -> l.contains("rpc method=")).count();
    }
  }

  static final String PROBE = "Probe";
  static final String PUBLISH = "NodePublishVolume";
  static final String UNPUBLISH = "NodeUnpublishVolume";
  static final String STATS = "NodeGetVolumeStats";
  static final String BIND_PROCESS = "mount --bind (process)";
  static final String UNBIND_PROCESS = "umount (process)";
  static final String BIND_FLOOR = "Mounts.bind (in-process floor)";
  static final String UNBIND_FLOOR = "Mounts.unmount (in-process floor)";

  private Samples probe() throws IOException {
    Samples probe = new Samples(PROBE, iterations);
    ProbeRequest r = ProbeRequest.getDefaultInstance();
    for (int i = 0; i < warmup; i++) {
      identity.probe(r);
    }
    long from = logSize();
    for (int i = 0; i < iterations; i++) {
      long t0 = System.nanoTime();
      identity.probe(r);
      probe.add(System.nanoTime() - t0);
    }
    serverSide(PROBE, from, "Probe");
    return probe;
  }

  private long logSize() throws IOException {
    return Files.size(serverLog);
  }

  /**
   * Collects the "us=" of the server's log lines for {@code method} written since byte {@code from}
   * (the server writes each line just after it hands over the response, so the last call's line can
   * land a moment after the loop ends; the count column shows whether any was missed).
   */
  private void serverSide(String name, long from, String method) throws IOException {
    Samples s = new Samples(name, iterations);
    byte[] all = Files.readAllBytes(serverLog);
    String text = new String(all, (int) Math.min(from, all.length), (int) Math.max(0, all.length - from),
        java.nio.charset.StandardCharsets.UTF_8);
    String marker = "rpc method=" + method + " ";
    for (String line : text.split("\n", -1)) {
      int at = line.indexOf(marker);
      int us = line.indexOf(" us=", Math.max(0, at));
      if (at >= 0 && line.contains("code=OK") && us > 0) {
        String digits = line.substring(us + 4).split("[^0-9]", 2)[0];
        s.add(Long.parseLong(digits) * 1000);
      }
    }
    if (s.count() > 0) {
      serverSide.add(s);
    }
  }

  /**
   * Deletes a volume the run has unstaged. The unstage detached its loop device, but while any other
   * process on the host holds the device open at that moment (another suite listing loop devices opens
   * each one) the kernel defers the detach to that process's close, and until then the volume is in
   * use (FAILED_PRECONDITION). So: a few tries over up to 10 s, as a CO would retry.
   */
  private static void deleteVolume(ControllerGrpc.ControllerBlockingStub controller, String vol)
      throws InterruptedException {
    for (int attempt = 1; ; attempt++) {
      try {
        controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());
        return;
      } catch (io.grpc.StatusRuntimeException e) {
        if (e.getStatus().getCode() != io.grpc.Status.Code.FAILED_PRECONDITION || attempt == 20) {
          throw e;
        }
        System.out.println("delete of " + vol + " refused, retrying: " + e.getStatus().getDescription());
        TimeUnit.MILLISECONDS.sleep(500);
      }
    }
  }

  private String createVolume(ControllerGrpc.ControllerBlockingStub controller, String name) {
    return controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(CAP)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(64 * MIB)).build()).getVolume().getVolumeId();
  }

  private Path stagingPath(String vol) throws IOException {
    return Files.createDirectories(root.resolve("staging/default/" + vol + "/" + USAGE));
  }

  private Path stage(String vol) throws IOException {
    Path staging = stagingPath(vol);
    node.nodeStageVolume(stageRequest(vol, staging));
    return staging;
  }

  private static NodeStageVolumeRequest stageRequest(String vol, Path staging) {
    return NodeStageVolumeRequest.newBuilder().setVolumeId(vol).setStagingTargetPath(staging.toString())
        .setVolumeCapability(CAP).build();
  }

  private static NodeUnstageVolumeRequest unstageRequest(String vol, Path staging) {
    return NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol).setStagingTargetPath(staging.toString()).build();
  }

  private void unstage(String vol, Path staging) {
    node.nodeUnstageVolume(unstageRequest(vol, staging));
  }

  /** Nomad 1.8+'s layout: per-alloc/&lt;alloc&gt;/&lt;vol&gt;/&lt;usage&gt;; Nomad makes the parent. */
  private Path target(int i, String vol) throws IOException {
    Path parent = Files.createDirectories(root.resolve("per-alloc/alloc-" + i + "/" + vol));
    return parent.resolve(USAGE);
  }

  private void dropAlloc(int i) throws IOException {
    Path alloc = root.resolve("per-alloc/alloc-" + i);
    try (Stream<Path> paths = Files.walk(alloc)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }

  private List<Samples> publishUnpublish(String vol, Path staging) throws IOException {
    Samples publish = new Samples("NodePublishVolume", iterations);
    Samples unpublish = new Samples("NodeUnpublishVolume", iterations);
    long from = -1;
    for (int i = 0; i < warmup + iterations; i++) {
      if (i == warmup) {
        from = logSize();
      }
      Path target = target(i, vol);
      NodePublishVolumeRequest p = publishRequest(vol, staging, target);
      NodeUnpublishVolumeRequest u = unpublishRequest(vol, target);
      long t0 = System.nanoTime();
      node.nodePublishVolume(p);
      long t1 = System.nanoTime();
      node.nodeUnpublishVolume(u);
      long t2 = System.nanoTime();
      if (i == 0) {
        check(!MountTable.isMountPoint(target) && !Files.exists(target), "unpublish left " + target + " behind");
      }
      if (i >= warmup) {
        publish.add(t1 - t0);
        unpublish.add(t2 - t1);
      }
      dropAlloc(i);
    }
    serverSide("NodePublishVolume", from, "NodePublishVolume");
    serverSide("NodeUnpublishVolume", from, "NodeUnpublishVolume");
    return List.of(publish, unpublish);
  }

  private static NodePublishVolumeRequest publishRequest(String vol, Path staging, Path target) {
    return NodePublishVolumeRequest.newBuilder().setVolumeId(vol).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(CAP).build();
  }

  private static NodeUnpublishVolumeRequest unpublishRequest(String vol, Path target) {
    return NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol).setTargetPath(target.toString()).build();
  }

  private static NodeGetVolumeStatsRequest statsRequest(String vol, Path target) {
    return NodeGetVolumeStatsRequest.newBuilder().setVolumeId(vol).setVolumePath(target.toString()).build();
  }

  private Samples stats(String vol, Path staging) throws IOException {
    Samples stats = new Samples("NodeGetVolumeStats", iterations);
    Path target = target(-1, vol);
    node.nodePublishVolume(publishRequest(vol, staging, target));
    NodeGetVolumeStatsRequest r = statsRequest(vol, target);
    NodeGetVolumeStatsResponse first = node.nodeGetVolumeStats(r);
    check(first.getUsageCount() == 2 && !first.getVolumeCondition().getAbnormal(), "unexpected stats " + first);
    long from = -1;
    for (int i = 0; i < warmup + iterations; i++) {
      if (i == warmup) {
        from = logSize();
      }
      long t0 = System.nanoTime();
      node.nodeGetVolumeStats(r);
      long t1 = System.nanoTime();
      if (i >= warmup) {
        stats.add(t1 - t0);
      }
    }
    serverSide("NodeGetVolumeStats", from, "NodeGetVolumeStats");
    node.nodeUnpublishVolume(unpublishRequest(vol, target));
    dropAlloc(-1);
    return stats;
  }

  /**
   * Every operation the gate compares, interleaved: each iteration makes a Probe, a publish, a stats
   * call on that target, its unpublish, the same bind through {@code mount --bind}/{@code umount}, and
   * through {@code Mounts.bind}/{@code unmount}, each onto a fresh target. A change in the machine's load
   * during the phase then hits a cost and its reference alike, which is what makes their ratio steady
   * enough for the gate; the separate phases measure each in a block of its own.
   */
  private List<Samples> interleaved(String vol, Path staging) throws IOException {
    Samples probe = new Samples(PROBE, iterations);
    Samples publish = new Samples(PUBLISH, iterations);
    Samples stats = new Samples(STATS, iterations);
    Samples unpublish = new Samples(UNPUBLISH, iterations);
    Samples bindProcess = new Samples(BIND_PROCESS, iterations);
    Samples unbindProcess = new Samples(UNBIND_PROCESS, iterations);
    Samples bindFloor = new Samples(BIND_FLOOR, iterations);
    Samples unbindFloor = new Samples(UNBIND_FLOOR, iterations);
    ProbeRequest r = ProbeRequest.getDefaultInstance();
    long from = -1;
    for (int i = 0; i < warmup + iterations; i++) {
      if (i == warmup) {
        from = logSize();
      }
      boolean timed = i >= warmup;
      Path target = target(i, vol);
      NodePublishVolumeRequest p = publishRequest(vol, staging, target);
      NodeGetVolumeStatsRequest st = statsRequest(vol, target);
      NodeUnpublishVolumeRequest u = unpublishRequest(vol, target);
      long t0 = System.nanoTime();
      identity.probe(r);
      long t1 = System.nanoTime();
      node.nodePublishVolume(p);
      long t2 = System.nanoTime();
      NodeGetVolumeStatsResponse statsResponse = node.nodeGetVolumeStats(st);
      long t3 = System.nanoTime();
      node.nodeUnpublishVolume(u);
      long t4 = System.nanoTime();
      if (i == 0) {
        check(statsResponse.getUsageCount() == 2 && !statsResponse.getVolumeCondition().getAbnormal(),
            "unexpected stats " + statsResponse);
        check(!MountTable.isMountPoint(target) && !Files.exists(target), "unpublish left " + target + " behind");
      }
      Path viaProcess = Files.createDirectories(target(i, "binary"));
      long t5 = System.nanoTime();
      ToolRunner.run(List.of("mount", "--bind", staging.toString(), viaProcess.toString()), TOOL_TIMEOUT);
      long t6 = System.nanoTime();
      ToolRunner.run(List.of("umount", viaProcess.toString()), TOOL_TIMEOUT);
      long t7 = System.nanoTime();
      Path direct = Files.createDirectories(target(i, "direct"));
      long t8 = System.nanoTime();
      Mounts.bind(staging, direct, false);
      long t9 = System.nanoTime();
      Mounts.unmount(direct);
      long t10 = System.nanoTime();
      if (timed) {
        probe.add(t1 - t0);
        publish.add(t2 - t1);
        stats.add(t3 - t2);
        unpublish.add(t4 - t3);
        bindProcess.add(t6 - t5);
        unbindProcess.add(t7 - t6);
        bindFloor.add(t9 - t8);
        unbindFloor.add(t10 - t9);
      }
      dropAlloc(i);
    }
    serverSide(PROBE, from, "Probe");
    serverSide(PUBLISH, from, "NodePublishVolume");
    serverSide(STATS, from, "NodeGetVolumeStats");
    serverSide(UNPUBLISH, from, "NodeUnpublishVolume");
    return List.of(probe, publish, stats, unpublish, bindProcess, unbindProcess, bindFloor, unbindFloor);
  }

  /** The same bind of the staging path onto a fresh target, through the binaries or in process. */
  private List<Samples> bindPairs(String bindName, String unbindName, Path staging, boolean binaries)
      throws IOException {
    Samples bind = new Samples(bindName, iterations);
    Samples unbind = new Samples(unbindName, iterations);
    for (int i = 0; i < warmup + iterations; i++) {
      Path target = Files.createDirectories(target(i, "binary"));
      long t0 = System.nanoTime();
      if (binaries) {
        ToolRunner.run(List.of("mount", "--bind", staging.toString(), target.toString()), TOOL_TIMEOUT);
      } else {
        Mounts.bind(staging, target, false);
      }
      long t1 = System.nanoTime();
      if (i == 0) {
        check(MountTable.isMountPoint(target), bindName + " did not mount " + target);
      }
      if (binaries) {
        ToolRunner.run(List.of("umount", target.toString()), TOOL_TIMEOUT);
      } else {
        Mounts.unmount(target);
      }
      long t2 = System.nanoTime();
      if (i == 0) {
        check(!MountTable.isMountPoint(target), unbindName + " left " + target + " mounted");
      }
      if (i >= warmup) {
        bind.add(t1 - t0);
        unbind.add(t2 - t1);
      }
      dropAlloc(i);
    }
    return List.of(bind, unbind);
  }

  /** Stage/unstage cycles of a volume formatted by an untimed first stage. */
  private List<Samples> stageCycles(String vol) throws IOException {
    Samples stage = new Samples("NodeStageVolume (formatted)", iterations);
    Samples unstage = new Samples("NodeUnstageVolume", iterations);
    Path staging = stagingPath(vol);
    node.nodeStageVolume(stageRequest(vol, staging)); // formats
    node.nodeUnstageVolume(unstageRequest(vol, staging));
    long from = -1;
    for (int i = 0; i < warmup + iterations; i++) {
      if (i == warmup) {
        from = logSize();
      }
      long t0 = System.nanoTime();
      node.nodeStageVolume(stageRequest(vol, staging));
      long t1 = System.nanoTime();
      if (i == 0) {
        check(MountTable.isMountPoint(staging), "stage did not mount " + staging);
      }
      node.nodeUnstageVolume(unstageRequest(vol, staging));
      long t2 = System.nanoTime();
      if (i >= warmup) {
        stage.add(t1 - t0);
        unstage.add(t2 - t1);
      }
    }
    serverSide("NodeStageVolume (formatted)", from, "NodeStageVolume");
    serverSide("NodeUnstageVolume", from, "NodeUnstageVolume");
    return List.of(stage, unstage);
  }

  /** Unmounts whatever the run left under the work directory (fillers, a failed run's), then deletes it. */
  private static void cleanUp(Path work) throws IOException {
    List<Path> left = MountTable.read().stream().map(m -> m.mountPoint()).filter(m -> m.startsWith(work))
        .sorted(Comparator.comparingInt(Path::getNameCount).reversed()).toList();
    for (Path m : left) {
      if (!m.getParent().getFileName().toString().equals("filler")) {
        System.err.println("cleaning up a mount the run left behind: " + m);
      }
      while (MountTable.isMountPoint(m) && Mounts.unmount(m)) {
        // stacked
      }
    }
    for (LoopDevice l : LoopDevices.list()) {
      if (l.backingFile().startsWith(work)) {
        System.err.println("detaching a loop device the run left behind: " + l.device());
        LoopDevices.detach(l);
      }
    }
    if (MountTable.read().stream().noneMatch(m -> m.mountPoint().startsWith(work))) {
      try (Stream<Path> paths = Files.walk(work)) {
        for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  private static void check(boolean ok, String message) {
    if (!ok) {
      throw new IllegalStateException(message);
    }
  }
}

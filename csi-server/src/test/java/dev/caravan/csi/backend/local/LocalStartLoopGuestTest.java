package dev.caravan.csi.backend.local;

import static dev.caravan.csi.backend.local.LocalGuest.POOL;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.PluginJvm;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.server.CsiServer;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code caravan serve --driver=local} started again and again, each time up to its socket answering
 * Probe, then stopped: every start must get there, with no JVM crash and no overrun of an ioctl
 * buffer. Start-up is when the plugin issues its first {@code /dev/zfs} ioctls and when the JIT
 * compiles the most, so a native fault of either kind shows here first.
 *
 * <p>Not in scripts/guest-suite's selection (every plugin start there already runs the buffer
 * guards, and one start here costs half a minute to a minute and a half of emulated time): run it with
 * {@code scripts/guest-suite --select-class} this class. Three starts by default; {@code
 * -Dcaravan.startLoop.count=N} and {@code -Dcaravan.startLoop.minutes=M} (no new start after M
 * minutes) for a long run, and {@code -Dcaravan.startLoop.jvmOptions=SET|SET...} for extra options of
 * the plugin JVMs: the starts take the sets in turn, so a comparison of two CPU configurations runs
 * under one load (options within a set separated by commas; an empty set is the default, e.g.
 * {@code "|-XX:UseAVX=0"}), all through {@code CARAVAN_GUEST_JAVA_OPTS}. Prints one line per start
 * and a summary per set.
 */
class LocalStartLoopGuestTest {
  private Path work;

  @BeforeEach
  void setUp() throws IOException {
    HostRequirements.assumeZfs();
    work = Files.createTempDirectory("caravan-start-loop-");
  }

  @AfterEach
  void tearDown() throws IOException {
    if (work == null) {
      return;
    }
    delete(work);
  }

  private enum Outcome { PROBED, CRASHED, GUARD_TRIPPED, FAILED }

  @Test
  void everyStartReachesProbeWithoutACrash() throws Exception {
    int count = Integer.getInteger("caravan.startLoop.count", 3);
    long minutes = Long.getLong("caravan.startLoop.minutes", 0);
    List<List<String>> sets = optionSets(System.getProperty("caravan.startLoop.jvmOptions", ""));
    Path config = work.resolve("caravan.properties");
    Files.writeString(config, "local.pools=" + POOL + "\n");

    long loopStart = System.nanoTime();
    List<Tally> tallies = sets.stream().map(Tally::new).toList();
    List<String> failures = new ArrayList<>();
    int starts = 0;
    for (int i = 1; i <= count; i++) {
      if (minutes > 0 && System.nanoTime() - loopStart > TimeUnit.MINUTES.toNanos(minutes)) {
        break;
      }
      starts++;
      Tally tally = tallies.get((i - 1) % tallies.size());
      Path dir = Files.createDirectory(work.resolve("start-" + i));
      long t0 = System.nanoTime();
      Result r = startOnce(dir, config, tally.options);
      long took = System.nanoTime() - t0;
      tally.add(r.outcome(), took);
      if (r.outcome() == Outcome.PROBED) {
        delete(dir);
      } else {
        failures.add("start " + i + " (plugin options " + tally.options + "): " + r.outcome() + ": " + r.detail());
      }
      System.out.printf("start-loop: start %d (plugin options %s): %s in %.1f s%n", i, tally.options, r.outcome(),
          took / 1e9);
    }
    List<String> summaries = new ArrayList<>();
    for (Tally t : tallies) {
      summaries.add(t.summary());
    }
    String summary = String.format("start-loop: %d starts in %.0f s; %s", starts,
        (System.nanoTime() - loopStart) / 1e9, String.join("; ", summaries));
    System.out.println(summary);
    System.out.println("start-loop: CPU flags the JIT may use: " + simdFlags());
    assertThat(failures).as(summary).isEmpty();
    assertThat(starts).as(summary).isPositive();
  }

  /** "SET|SET...", options within a set separated by commas; no sets at all is one empty set. */
  private static List<List<String>> optionSets(String property) {
    List<List<String>> sets = new ArrayList<>();
    for (String set : property.split("\\|", -1)) {
      sets.add(Arrays.stream(set.split("[,\\s]+")).filter(o -> !o.isBlank()).toList());
    }
    return sets;
  }

  /** The outcomes of the starts that ran with one option set. */
  private static final class Tally {
    final List<String> options;
    final Map<Outcome, Integer> outcomes = new EnumMap<>(Outcome.class);
    long probedNanos;

    Tally(List<String> options) {
      this.options = options;
      for (Outcome o : Outcome.values()) {
        outcomes.put(o, 0);
      }
    }

    void add(Outcome outcome, long nanos) {
      outcomes.merge(outcome, 1, Integer::sum);
      if (outcome == Outcome.PROBED) {
        probedNanos += nanos;
      }
    }

    String summary() {
      int probed = outcomes.get(Outcome.PROBED);
      int total = outcomes.values().stream().mapToInt(Integer::intValue).sum();
      return String.format("plugin options %s: %d starts, %d reached Probe (mean %.1f s), %d crashed,"
              + " %d tripped a buffer guard, %d failed otherwise", options, total, probed,
          probed == 0 ? 0 : probedNanos / 1e9 / probed, outcomes.get(Outcome.CRASHED),
          outcomes.get(Outcome.GUARD_TRIPPED), outcomes.get(Outcome.FAILED));
    }
  }

  /** The SIMD flags of the (emulated) CPU: what the JIT's stubs are generated for. */
  private static List<String> simdFlags() throws IOException {
    return Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("flags"))
        .findFirst().map(l -> Arrays.stream(l.substring(l.indexOf(':') + 1).strip().split(" "))
            .filter(f -> f.matches("avx.*|sse4_2|fma|bmi2")).toList())
        .orElse(List.of());
  }

  private record Result(Outcome outcome, String detail) {}

  private static Result startOnce(Path dir, Path config, List<String> jvmOptions)
      throws IOException, InterruptedException {
    Path socket = dir.resolve("csi.sock");
    List<String> command = PluginJvm.caravan(List.of("serve", "--http-listen=off", "--driver=local",
        "--endpoint", "unix://" + socket, "--node-id", "n1", "--data-dir", dir.resolve("data").toString(),
        "--config", config.toString()));
    List<String> options = new ArrayList<>(List.of("-XX:-CreateCoredumpOnCrash",
        "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log")));
    options.addAll(jvmOptions);
    command.addAll(1, options); // after the java binary, before the class path and main class
    Path log = dir.resolve("plugin.log");
    Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    p.getOutputStream().close();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
    try {
      while (System.nanoTime() < deadline) {
        if (!p.isAlive()) {
          return died(dir, log, p.exitValue());
        }
        if (CsiServer.isLive(socket) && probes(socket)) {
          return new Result(Outcome.PROBED, "");
        }
        Thread.sleep(100);
      }
      return new Result(Outcome.FAILED, "no Probe answer within 300 s: " + Files.readString(log));
    } finally {
      p.destroy();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        p.waitFor(20, TimeUnit.SECONDS);
      }
    }
  }

  private static boolean probes(Path socket) {
    UnixChannel channel = new UnixChannel(socket);
    try {
      return IdentityGrpc.newBlockingStub(channel.channel()).withDeadlineAfter(30, TimeUnit.SECONDS)
          .probe(ProbeRequest.getDefaultInstance()).getReady().getValue();
    } catch (RuntimeException notYet) {
      return false;
    } finally {
      channel.close();
    }
  }

  private static Result died(Path dir, Path log, int exit) throws IOException {
    String output = Files.readString(log);
    try (Stream<Path> files = Files.list(dir)) {
      List<Path> crashLogs = files.filter(f -> f.getFileName().toString().startsWith("hs_err_")).toList();
      if (output.contains("KernelBufferOverrunError") || output.contains("wrote past the end")) {
        return new Result(Outcome.GUARD_TRIPPED, "exit " + exit + ": " + output);
      }
      if (!crashLogs.isEmpty() || exit > 128) {
        String first = crashLogs.isEmpty() ? "" : head(crashLogs.get(0));
        return new Result(Outcome.CRASHED, "exit " + exit + ", crash log " + crashLogs + ":\n" + first
            + "\noutput:\n" + output);
      }
      return new Result(Outcome.FAILED, "exit " + exit + " before Probe: " + output);
    }
  }

  /** The part of a crash log that names the fault: its first 40 lines. */
  private static String head(Path crashLog) {
    try (Stream<String> lines = Files.lines(crashLog)) {
      return String.join("\n", lines.limit(40).toList());
    } catch (IOException | java.io.UncheckedIOException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }

  private static void delete(Path root) throws IOException {
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}

package dev.caravan.benchmarks;

import dev.caravan.csi.dhv.DhvInstaller;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Caravan's DHV plugin as a Nomad client runs it: the installed {@code caravan-file} executable,
 * started with an empty environment plus the {@code DHV_*} variables, its stdout read to the end.
 * {@code fingerprint} is the wrapper alone (Nomad allows 1 s); {@code createDelete} is one volume's
 * whole life through two JVM starts (create: provision a 16 MiB file image, attach, mkfs.ext4,
 * mount; delete: unmount, detach, remove). {@code mkdirBaseline} is what Nomad's built-in
 * {@code mkdir} plugin does for a volume, in process: the floor for any plugin.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class DhvBenchmark {
  private Path work;
  private Path plugin;
  private Path volumes;
  private String nodeId;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Requirements.requireRoot();
    Requirements.requireLoopControl();
    Requirements.requireBinary("mkfs.ext4");
    work = Files.createTempDirectory("caravan-dhv-bench");
    volumes = work.resolve("host_volumes");
    nodeId = UUID.randomUUID().toString();
    String classPath = Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
        .map(e -> Path.of(e).toAbsolutePath().toString()).reduce((a, b) -> a + File.pathSeparator + b).orElseThrow();
    new DhvInstaller(Path.of(System.getProperty("java.home"), "bin", "java"), classPath, work.resolve("data"), Map.of())
        .install(work.resolve("plugins"), "file");
    plugin = work.resolve("plugins/caravan-file");
    String answer = run("fingerprint", Map.of("DHV_OPERATION", "fingerprint"));
    if (!answer.contains("\"version\"")) {
      throw new IllegalStateException("the installed plugin does not fingerprint: " + answer);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    try (Stream<Path> all = Files.walk(work)) {
      for (Path p : (Iterable<Path>) all.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(p);
      }
    }
  }

  @Benchmark
  @Warmup(iterations = 2, time = 2)
  @Measurement(iterations = 5, time = 3)
  public String fingerprint() {
    return run("fingerprint", Map.of("DHV_OPERATION", "fingerprint"));
  }

  @Benchmark
  @Warmup(iterations = 1, time = 5)
  @Measurement(iterations = 4, time = 10)
  public String createDelete() {
    String id = UUID.randomUUID().toString();
    Map<String, String> env = env("create", id);
    env.put("DHV_CAPACITY_MIN_BYTES", Long.toString(16L << 20));
    env.put("DHV_CAPACITY_MAX_BYTES", "0");
    String created = run("create", env);
    if (!created.contains("\"path\"")) {
      throw new IllegalStateException("create failed: " + created);
    }
    Map<String, String> del = env("delete", id);
    del.put("DHV_CREATED_PATH", volumes.resolve(id).toString());
    return created + run("delete", del);
  }

  @Benchmark
  @Warmup(iterations = 2, time = 2)
  @Measurement(iterations = 5, time = 3)
  public boolean mkdirBaseline() throws IOException {
    Path dir = volumes.resolve(UUID.randomUUID().toString());
    Files.createDirectories(dir);
    return Files.deleteIfExists(dir);
  }

  private Map<String, String> env(String op, String volumeId) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("DHV_OPERATION", op);
    env.put("DHV_VOLUMES_DIR", volumes.toString());
    env.put("DHV_PLUGIN_DIR", plugin.getParent().toString());
    env.put("DHV_NODE_POOL", "default");
    env.put("DHV_NAMESPACE", "default");
    env.put("DHV_VOLUME_NAME", "bench");
    env.put("DHV_VOLUME_ID", volumeId);
    env.put("DHV_NODE_ID", nodeId);
    env.put("DHV_PARAMETERS", "null");
    return env;
  }

  private String run(String op, Map<String, String> env) {
    ProcessBuilder pb = new ProcessBuilder(plugin.toString(), op)
        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
        .redirectError(ProcessBuilder.Redirect.DISCARD);
    pb.environment().clear();
    pb.environment().putAll(env);
    try {
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (p.waitFor() != 0) {
        throw new IllegalStateException(op + " exited with " + p.exitValue() + ": " + out);
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

package dev.caravan.benchmarks;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.iscsi.IscsiGc;
import dev.caravan.csi.peer.Coordinator;
import dev.caravan.csi.peer.PeerAddress;
import dev.caravan.csi.peer.PeerSettings;
import dev.caravan.csi.peer.StaticPeers;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * CreateVolume and ListVolumes against the number of nodes of a plugin with peers: {@code nodes}
 * plugins on the file backend in this JVM (1: peers configured, none listed), each with its CSI unix
 * socket and mTLS peer endpoint on loopback, certificates from a throwaway CA made with {@code
 * openssl}. Every call goes to n1's socket. {@code create}: a new 16 MiB volume whose name n1 is home
 * to, with {@code host=n1} (the home decides and creates on itself) or {@code host=auto}; deleted
 * again in an untimed teardown. {@code list}: ListVolumes of every node (ten volumes on each). Before
 * measuring, the setup waits up to 30 s (system property {@code
 * caravan.bench.authority-wait-seconds}) for n1's {@code peer/authority} file, which a plugin whose
 * creates survey every node never writes.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class PeerScaleBenchmark {
  private static final long SIZE = 16L << 20;
  /** System property: the longest the setup waits for n1's authority file, in seconds. */
  private static final String AUTHORITY_WAIT = "caravan.bench.authority-wait-seconds";

  @Param({"1", "2", "5"})
  public int nodes;

  @Param({"n1", "auto"})
  public String host;

  private Path dir;
  private final List<Plugin> plugins = new ArrayList<>();
  private final List<UnixChannel> channels = new ArrayList<>();
  private final List<String> ids = new ArrayList<>();
  private ControllerGrpc.ControllerBlockingStub n1;
  private long counter;
  private String made;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    dir = Files.createTempDirectory("caravan-bench-scale");
    PeerFixtures.certificateAuthority(dir);
    Map<String, PeerAddress> all = new LinkedHashMap<>();
    for (int i = 1; i <= nodes; i++) {
      all.put("n" + i, new PeerAddress("127.0.0.1", PeerFixtures.freePort()));
    }
    for (String id : all.keySet()) {
      Path d = PeerFixtures.nodeCertificate(dir, id);
      Map<String, PeerAddress> others = new LinkedHashMap<>(all);
      others.remove(id);
      PeerSettings peers = new PeerSettings(all.get(id), d.resolve("cert.pem"), d.resolve("key.pem"),
          dir.resolve("ca.pem"), new StaticPeers(others), 0, Duration.ofSeconds(30));
      Path socket = d.resolve("csi.sock");
      plugins.add(Plugin.start(Plugin.Settings.of("file", socket, id, d.resolve("data")), IscsiGc.DEFAULT,
          Optional.of(peers)));
      UnixChannel c = new UnixChannel(socket);
      channels.add(c);
      if (id.equals("n1")) {
        n1 = ControllerGrpc.newBlockingStub(c.channel());
      }
    }
    Path marker = dir.resolve("n1").resolve("data").resolve("peer").resolve("authority");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Integer.getInteger(AUTHORITY_WAIT, 30));
    while (!Files.exists(marker) && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    for (String id : all.keySet()) {
      for (int i = 0; i < 10; i++) {
        ids.add(n1.createVolume(create(name("listed"), id)).getVolume().getVolumeId());
      }
    }
  }

  /** A fresh name whose home is n1. */
  private String name(String prefix) {
    List<String> all = new ArrayList<>();
    for (int i = 1; i <= nodes; i++) {
      all.add("n" + i);
    }
    while (true) {
      String n = prefix + "-" + counter++;
      if (Coordinator.of(n, all).equals("n1")) {
        return n;
      }
    }
  }

  private static CreateVolumeRequest create(String name, String host) {
    return PeerFixtures.createRequest(name, SIZE).putParameters("host", host).build();
  }

  @Benchmark
  public String create() {
    made = n1.createVolume(create(name("v"), host)).getVolume().getVolumeId();
    return made;
  }

  @TearDown(Level.Invocation)
  public void deleteMade() {
    if (made != null) {
      n1.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(made).build());
      made = null;
    }
  }

  @Benchmark
  public int list() {
    return n1.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesCount();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    PeerFixtures.stop(channels, plugins, dir);
  }
}

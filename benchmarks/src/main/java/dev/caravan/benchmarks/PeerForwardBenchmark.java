package dev.caravan.benchmarks;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.iscsi.IscsiGc;
import dev.caravan.csi.peer.Coordinator;
import dev.caravan.csi.peer.PeerAddress;
import dev.caravan.csi.peer.PeerSettings;
import dev.caravan.csi.peer.StaticPeers;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
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
 * What forwarding between peers costs a controller call, on a two-node plugin: nodes n1 and n2 on the file backend in this JVM,
 * each with its CSI unix socket and its mTLS peer endpoint on loopback (certificates from a throwaway
 * CA made with {@code openssl} at setup). Every call is sent to n1's CSI socket.
 *
 * <ul>
 *   <li>{@code create}: CreateVolume of a new 16 MiB volume (the delete that follows each one, an
 *       untimed teardown, keeps the node's volume count steady). {@code route}: {@code alone}, a
 *       plugin without peers (no survey, no forwarding); {@code here}, n1 places on itself (it
 *       coordinates the name, asks n2 whether it holds the name, creates); {@code forwarded}, n1
 *       coordinates and n2 creates, over the peer endpoint; {@code coordinated}, n2 coordinates the
 *       name (one hop from n1 to n2) and creates there.
 *   <li>{@code get}: ControllerGetVolume of a volume on n1 ({@code here}) or on n2 ({@code
 *       forwarded}: one peer round trip on loopback with mTLS, connection kept).
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 3)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class PeerForwardBenchmark {
  private static final long SIZE = 16L << 20;
  private static final Set<String> NODES = Set.of("n1", "n2");

  @Param({"alone", "here", "forwarded", "coordinated"})
  public String route;

  private Path dir;
  private final List<Plugin> plugins = new ArrayList<>();
  private final List<UnixChannel> channels = new ArrayList<>();
  private ControllerGrpc.ControllerBlockingStub n1;
  private String owner;
  private String coordinator;
  private String existing;
  private long counter;
  private String made;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    dir = Files.createTempDirectory("caravan-bench-peers");
    if (route.equals("alone")) {
      Path socket = dir.resolve("alone.sock");
      plugins.add(Plugin.start(Plugin.Settings.of("file", socket, "n1", dir.resolve("alone")), IscsiGc.DEFAULT,
          Optional.empty()));
      n1 = stub(socket);
      owner = "n1";
      coordinator = "n1";
    } else {
      PeerFixtures.certificateAuthority(dir);
      int[] ports = {PeerFixtures.freePort(), PeerFixtures.freePort()};
      String[] ids = {"n1", "n2"};
      for (int i = 0; i < 2; i++) {
        String id = ids[i];
        Path d = PeerFixtures.nodeCertificate(dir, id);
        String other = ids[1 - i];
        PeerSettings peers = new PeerSettings(new PeerAddress("127.0.0.1", ports[i]), d.resolve("cert.pem"),
            d.resolve("key.pem"), dir.resolve("ca.pem"),
            new StaticPeers(Map.of(other, new PeerAddress("127.0.0.1", ports[1 - i]))), 0, Duration.ofSeconds(30));
        Path socket = d.resolve("csi.sock");
        plugins.add(Plugin.start(Plugin.Settings.of("file", socket, id, d.resolve("data")), IscsiGc.DEFAULT,
            Optional.of(peers)));
        if (id.equals("n1")) {
          n1 = stub(socket);
        }
      }
      owner = route.equals("here") ? "n1" : "n2";
      coordinator = route.equals("coordinated") ? "n2" : "n1";
    }
    existing = n1.createVolume(create(name("existing"), owner)).getVolume().getVolumeId();
  }

  private ControllerGrpc.ControllerBlockingStub stub(Path socket) {
    UnixChannel c = new UnixChannel(socket);
    channels.add(c);
    return ControllerGrpc.newBlockingStub(c.channel());
  }

  /** A fresh name that {@link #coordinator} coordinates (any name, alone). */
  private String name(String prefix) {
    while (true) {
      String n = prefix + "-" + counter++;
      if (route.equals("alone") || Coordinator.of(n, NODES).equals(coordinator)) {
        return n;
      }
    }
  }

  private CreateVolumeRequest create(String name, String host) {
    CreateVolumeRequest.Builder b = PeerFixtures.createRequest(name, SIZE);
    if (!route.equals("alone")) {
      b.putParameters("host", host);
    }
    return b.build();
  }

  @Benchmark
  public String create() {
    made = n1.createVolume(create(name("v"), owner)).getVolume().getVolumeId();
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
  public long get() {
    return n1.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(existing).build())
        .getVolume().getCapacityBytes();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    PeerFixtures.stop(channels, plugins, dir);
  }
}

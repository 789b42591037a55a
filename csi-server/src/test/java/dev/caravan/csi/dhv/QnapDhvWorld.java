package dev.caravan.csi.dhv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.drivers.Backends;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.backend.qnap.SimulatedAppliance;
import dev.caravan.csi.support.Json;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;

/**
 * The qnap DHV plugin's world in one JVM: a simulated appliance (with real LIO targets behind it in
 * the guest), and plugin nodes that are separate hosts as far as the plugin can tell: each its own
 * data directory (so its own records and node journal), its own volumes directory, and its own
 * identity on the appliance (an iSCSI initiator name). Operations run through {@link DhvMain#run},
 * the entry point the installed executable {@code exec}s, in this JVM: a JVM start per operation
 * costs tens of seconds under the guest's emulated CPU.
 */
final class QnapDhvWorld implements AutoCloseable {
  /**
   * A plugin node.
   *
   * @param initiator its identity on the appliance: what the target's ACL admits
   */
  record PluginNode(DhvEnv.Node env, Path dataDir, String initiator) {
    String id() {
      return env.id();
    }

    Path path(DhvEnv.Volume v) {
      return env.volumesDir().resolve(v.id());
    }

    /** The same host (data and volumes directories) under another identity on the appliance. */
    PluginNode as(String otherInitiator) {
      return new PluginNode(env, dataDir, otherInitiator);
    }
  }

  record Outcome(int status, String stdout) {
    @SuppressWarnings("unchecked") // the plugin's answer is one JSON object
    Map<String, Object> json() {
      return (Map<String, Object>) Json.parse(stdout);
    }
  }

  static final long GIB = 1L << 30;

  final SimulatedAppliance appliance;
  final Map<String, String> options;
  private final Path work;

  QnapDhvWorld(Path work, SimulatedAppliance appliance, List<String> portals) throws IOException {
    this.work = work;
    this.appliance = appliance;
    this.options = appliance.options(portals, Map.of());
  }

  PluginNode node(String name, String initiator) {
    return new PluginNode(new DhvEnv.Node(uuid(), work.resolve(name).resolve("host_volumes"), work.resolve("plugins")),
        work.resolve(name).resolve("data"), initiator);
  }

  Outcome run(PluginNode n, String mode, Map<String, String> env) {
    return run(n, mode, env, Map.of());
  }

  Outcome run(PluginNode n, String mode, Map<String, String> env, Map<String, String> extraOptions) {
    Map<String, String> all = new HashMap<>(options);
    all.putAll(extraOptions);
    List<String> args = new ArrayList<>(List.of("--driver", "qnap", "--mode", mode, "--data-dir", n.dataDir().toString()));
    all.forEach((k, v) -> args.addAll(List.of("--option", k + "=" + v)));
    args.add(env.get("DHV_OPERATION"));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int status;
    try (PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8)) {
      status = DhvMain.run(args.toArray(String[]::new), env, ps, n::initiator);
    }
    return new Outcome(status, out.toString(StandardCharsets.UTF_8).strip());
  }

  Map<String, Object> ok(PluginNode n, String mode, Map<String, String> env) {
    Outcome o = run(n, mode, env);
    assertThat(o.status()).as("%s %s on %s: %s", mode, env.get("DHV_OPERATION"), n.initiator(), o.stdout()).isZero();
    return o.json();
  }

  /** The appliance's volume for a DHV volume, read through the backend's own listing (the oracle's ids). */
  String backendId(DhvEnv.Volume v) {
    try (Backend b = backend()) {
      String key = b.controller().volumeLockKey("dhv-" + v.id());
      return b.controller().listVolumes().stream().map(VolumeInfo::id)
          .filter(id -> b.controller().volumeId(id) instanceof dev.caravan.csi.backend.IdShape.Ours o
              && o.lockKey().equals(key))
          .findFirst().orElseThrow(() -> new AssertionError("no LUN on the appliance for " + v.id()));
    }
  }

  /** The NAA id of the volume's LUN, as the appliance lists it (its WWID is "3" and this). */
  String naa(String backendId) {
    try (Backend b = backend()) {
      return b.controller().findVolume(backendId).orElseThrow().context().get("naa");
    }
  }

  /** The qnap backend as another tool would open it (a snapshot by an operator, a publish elsewhere). */
  Backend backend() {
    return Backends.open("qnap", new BackendConfig("oracle", work.resolve("oracle"), options, NodeUsage.none()));
  }

  /** The appliance administrator's password, as the credentials file holds it. */
  String password() throws IOException {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(Path.of(options.get("credentials-file")), StandardCharsets.UTF_8)) {
      p.load(r);
    }
    return p.getProperty("password");
  }

  static DhvEnv.Volume volume(String name, long minBytes, String parameters) {
    return new DhvEnv.Volume(uuid(), name, "default", minBytes, 0, parameters);
  }

  static String uuid() {
    return UUID.randomUUID().toString();
  }

  @Override
  public void close() {
    appliance.close();
  }
}

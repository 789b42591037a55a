package dev.caravan.csi.dhv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** How the plugin reads Nomad's environment and a volume's parameters; no host state involved. */
class DhvRequestTest {
  private static final String VOLUME = "0b5c0d7e-9a6f-4c1e-8b1e-2f3d4a5b6c7d";
  private static final String NODE = "5f0e1d2c-3b4a-4958-8776-655443322110";

  private static Map<String, String> create() {
    Map<String, String> env = new HashMap<>();
    env.put("DHV_OPERATION", "create");
    env.put("DHV_VOLUMES_DIR", "/opt/nomad/data/host_volumes");
    env.put("DHV_PLUGIN_DIR", "/opt/nomad/data/host_volume_plugins");
    env.put("DHV_NODE_POOL", "default");
    env.put("DHV_NAMESPACE", "default");
    env.put("DHV_VOLUME_NAME", "../../etc/passwd");
    env.put("DHV_VOLUME_ID", VOLUME);
    env.put("DHV_NODE_ID", NODE);
    env.put("DHV_CAPACITY_MIN_BYTES", "0");
    env.put("DHV_CAPACITY_MAX_BYTES", "0");
    env.put("DHV_PARAMETERS", "null");
    return env;
  }

  @Test
  void theMountPathComesFromTheVolumeIdAlone() {
    DhvRequest r = DhvRequest.from(Operation.CREATE, create());
    assertThat(r.mountPath()).isEqualTo(Path.of("/opt/nomad/data/host_volumes", VOLUME));
    assertThat(r.parameters()).isEmpty();
    assertThat(r.volumeName()).isEqualTo("../../etc/passwd");
  }

  @Test
  void nomadsParameterJsonIsReadAndAnythingElseRefused() {
    assertThat(DhvRequest.parameters("{\"fsType\":\"xfs\",\"mode\":\"0755\"}"))
        .containsExactlyInAnyOrderEntriesOf(Map.of("fsType", "xfs", "mode", "0755"));
    assertThat(DhvRequest.parameters("null")).isEmpty();
    assertThatThrownBy(() -> DhvRequest.parameters("{\"uid\":1000}")).hasMessageContaining("DHV_PARAMETERS.uid must be a string");
    assertThatThrownBy(() -> DhvRequest.parameters("[1]")).hasMessageContaining("JSON object");
    assertThatThrownBy(() -> DhvRequest.parameters("{")).hasMessageContaining("not JSON");
  }

  @Test
  void everyVariableThatReachesAPathIsChecked() {
    for (String[] bad : new String[][] {
        {"DHV_VOLUME_ID", "../x"}, {"DHV_VOLUME_ID", VOLUME.toUpperCase(java.util.Locale.ROOT)},
        {"DHV_NODE_ID", ""}, {"DHV_VOLUMES_DIR", "relative/dir"}, {"DHV_VOLUMES_DIR", "/a/../b"},
        {"DHV_VOLUMES_DIR", "/"}, {"DHV_CAPACITY_MIN_BYTES", "-1"}, {"DHV_CAPACITY_MAX_BYTES", "10GiB"},
        {"DHV_OPERATION", "delete"}}) {
      Map<String, String> env = create();
      env.put(bad[0], bad[1]);
      assertThatThrownBy(() -> DhvRequest.from(Operation.CREATE, env)).as(bad[0] + "=" + bad[1])
          .isInstanceOf(DhvException.class).hasMessageContaining(bad[0])
          .satisfies(e -> assertThat(((DhvException) e).exitStatus()).isEqualTo(DhvException.INVALID));
    }
    Map<String, String> inverted = create();
    inverted.put("DHV_CAPACITY_MIN_BYTES", "200");
    inverted.put("DHV_CAPACITY_MAX_BYTES", "100");
    assertThatThrownBy(() -> DhvRequest.from(Operation.CREATE, inverted)).hasMessageContaining("below");
  }

  @Test
  void theAutoDeleteVariablesAreAccepted() {
    Map<String, String> env = create();
    env.put("DHV_OPERATION", "delete");
    env.remove("DHV_CAPACITY_MIN_BYTES");
    env.remove("DHV_CAPACITY_MAX_BYTES");
    env.put("DHV_NAMESPACE", "");
    env.put("DHV_VOLUME_NAME", "");
    env.put("DHV_CREATED_PATH", "/opt/nomad/data/host_volumes");
    DhvRequest r = DhvRequest.from(Operation.DELETE, env);
    assertThat(r.mountPath()).isEqualTo(Path.of("/opt/nomad/data/host_volumes", VOLUME));
    assertThat(r.createdPath()).isEqualTo(Optional.of("/opt/nomad/data/host_volumes"));
  }

  @Test
  void parametersAreSplitBetweenBackendAndMountRoot() {
    DhvParameters p = DhvParameters.parse(Map.of("fsType", "xfs", "mode", "0750", "uid", "1000"), Set.of("fsType"));
    assertThat(p.backend()).containsExactly(Map.entry("fsType", "xfs"));
    assertThat(p.mode()).contains(0750);
    assertThat(p.uid()).contains(1000);
    assertThat(p.gid()).isEmpty();
    assertThatThrownBy(() -> DhvParameters.parse(Map.of("pool", "tank"), Set.of("fsType")))
        .hasMessageContaining("'pool' is not known; known parameters: fsType, gid, mode, uid");
    assertThatThrownBy(() -> DhvParameters.parse(Map.of("mode", "4755"), Set.of()))
        .hasMessageContaining("parameter mode '4755'");
    assertThatThrownBy(() -> DhvParameters.parse(Map.of("uid", "root"), Set.of()))
        .hasMessageContaining("parameter uid 'root'");
  }

  @Test
  void theJvmAnswersFingerprintAndRefusesBadInvocationsWithJson() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
    String[] base = {"--driver", "file", "--mode", "deferred", "--data-dir", "/nonexistent"};
    int status = DhvMain.run(append(base, "fingerprint"), Map.of("DHV_OPERATION", "fingerprint"), ps);
    assertThat(status).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).contains("\"deferred_bind\":true");
    out.reset();
    status = DhvMain.run(append(base, "expand"), Map.of(), ps);
    assertThat(status).isEqualTo(DhvException.INVALID);
    assertThat(out.toString(StandardCharsets.UTF_8))
        .startsWith("{\"error\":").contains("unknown operation 'expand'; known: fingerprint, create, delete");
  }

  private static String[] append(String[] base, String op) {
    String[] out = java.util.Arrays.copyOf(base, base.length + 1);
    out[base.length] = op;
    return out;
  }
}

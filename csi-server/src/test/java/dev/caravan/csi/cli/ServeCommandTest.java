package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ServeCommandTest {
  @Test
  void allowedRootIsRepeatableAndDocumented() {
    ServeCommand serve = ServeCommand.parse("--allowed-root", "/srv/nomad/client/csi", "--allowed-root=/local/csi")
        .orElseThrow();
    assertThat(serve.allowedRoots).containsExactly(Path.of("/srv/nomad/client/csi"), Path.of("/local/csi"));
    assertThat(usage()).contains("--allowed-root", "<state_dir>/csi", "/local/csi");
  }

  @Test
  void aQnapNodeIsNamedByItsInitiatorUnlessTold() throws Exception {
    Path file = Path.of("/etc/iscsi/initiatorname.iscsi");
    assumeTrue(Files.isReadable(file) && System.getenv("CSI_NODE_ID") == null,
        "needs open-iscsi's " + file + " (and no CSI_NODE_ID in the environment)");
    String iqn = Files.readAllLines(file).stream().filter(l -> l.startsWith("InitiatorName="))
        .map(l -> l.substring("InitiatorName=".length()).strip()).findFirst().orElseThrow();
    ServeCommand serve = ServeCommand.parse("--driver=qnap").orElseThrow();
    assertThat(serve.nodeId("qnap")).isEqualTo(iqn);
    assertThat(serve.nodeId("file")).isNotEqualTo(iqn);
    ServeCommand told = ServeCommand.parse("--driver=qnap", "--node-id=iqn.2026-01.dev.caravan:told").orElseThrow();
    assertThat(told.nodeId("qnap")).isEqualTo("iqn.2026-01.dev.caravan:told");
  }

  @Test
  void anIscsiIfaceIsForQnapOnlyAndMustExistBeforeStarting(@TempDir Path dir) throws Exception {
    assumeTrue(System.getenv("CSI_NODE_ID") == null, "CSI_NODE_ID in the environment names the node");
    String[] common = {"--endpoint=unix://" + dir.resolve("csi.sock"), "--http-listen=off",
        "--data-dir=" + dir.resolve("data")};
    ServeCommand file = ServeCommand.parse(concat(common, "--driver=file", "--iscsi-iface=caravan-b")).orElseThrow();
    assertThat(file.call()).as("not a qnap driver").isEqualTo(2);
    ServeCommand bad = ServeCommand.parse(concat(common, "--driver=qnap", "--iscsi-iface=../etc")).orElseThrow();
    assertThat(bad.call()).as("not an interface name").isEqualTo(2);
    ServeCommand absent = ServeCommand.parse(concat(common, "--driver=qnap", "--iscsi-iface=caravan-test-absent-iface")).orElseThrow();
    assertThat(Path.of("/etc/iscsi/ifaces/caravan-test-absent-iface")).doesNotExist();
    assertThat(absent.call()).as("an interface with no record has no initiator name to be the node id").isEqualTo(2);
    assertThat(dir.resolve("csi.sock")).doesNotExist();
    assertThat(usage().replaceAll("\\s+", " "))
        .contains("--iscsi-iface=NAME", "/etc/iscsi/ifaces", "initiatorname");
  }

  private static String usage() {
    return ServeCommand.FLAGS.usage();
  }

  private static String[] concat(String[] a, String... b) {
    return java.util.stream.Stream.concat(java.util.Arrays.stream(a), java.util.Arrays.stream(b)).toArray(String[]::new);
  }

  @Test
  void theQnapDriverSaysWhatItServes() {
    String usage = usage().replaceAll("\\s+", " ");
    assertThat(usage).contains("qnap").contains("initiator").contains("multipath").doesNotContain("UNIMPLEMENTED")
        .contains("CARAVAN_QNAP_PASSWORD").contains("never from flags");
  }

  @Test
  void iscsiGcTakesOnOrOffAndRefusesAnythingElseBeforeStarting(@TempDir Path dir) throws Exception {
    ServeCommand serve = ServeCommand.parse("--iscsi-gc=maybe", "--endpoint=unix://" + dir.resolve("csi.sock"),
        "--http-listen=off").orElseThrow();
    assertThat(serve.call()).isEqualTo(2);
    assertThat(dir.resolve("csi.sock")).doesNotExist();
    assertThat(usage().replaceAll("\\s+", " "))
        .contains("--iscsi-gc=on|off", "never deletes", "default: on");
  }

  @Test
  void peerFlagsRefuseAnythingButMutualTlsBeforeStarting(@TempDir Path dir) throws Exception {
    ServeCommand serve = ServeCommand.parse("--peer-listen=127.0.0.1:9700", "--peer=n2=10.0.0.2:9700", "--endpoint=unix://" + dir.resolve("csi.sock"),
        "--http-listen=off", "--data-dir=" + dir.resolve("data")).orElseThrow();
    assertThat(serve.call()).isEqualTo(2);
    assertThat(dir.resolve("csi.sock")).doesNotExist();
    assertThat(usage().replaceAll("\\s+", " "))
        .contains("--peer=NODE=HOST:PORT", "mTLS only", "subjectAltName", "--placement-reserve=SIZE");
  }
}

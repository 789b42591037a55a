package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ServeCommandTest {
  @Test
  void allowedRootIsRepeatableAndDocumented() {
    ServeCommand serve = new ServeCommand();
    CommandLine cli = new CommandLine(serve);
    cli.parseArgs("--allowed-root", "/srv/nomad/client/csi", "--allowed-root=/local/csi");
    assertThat(serve.allowedRoots).containsExactly(Path.of("/srv/nomad/client/csi"), Path.of("/local/csi"));
    assertThat(cli.getUsageMessage()).contains("--allowed-root", "<state_dir>/csi", "/local/csi");
  }

  @Test
  void aQnapNodeIsNamedByItsInitiatorUnlessTold() throws Exception {
    Path file = Path.of("/etc/iscsi/initiatorname.iscsi");
    assumeTrue(Files.isReadable(file) && System.getenv("CSI_NODE_ID") == null,
        "needs open-iscsi's " + file + " (and no CSI_NODE_ID in the environment)");
    String iqn = Files.readAllLines(file).stream().filter(l -> l.startsWith("InitiatorName="))
        .map(l -> l.substring("InitiatorName=".length()).strip()).findFirst().orElseThrow();
    ServeCommand serve = new ServeCommand();
    new CommandLine(serve).parseArgs("--driver=qnap");
    assertThat(serve.nodeId("qnap")).isEqualTo(iqn);
    assertThat(serve.nodeId("file")).isNotEqualTo(iqn);
    ServeCommand told = new ServeCommand();
    new CommandLine(told).parseArgs("--driver=qnap", "--node-id=iqn.2026-01.dev.caravan:told");
    assertThat(told.nodeId("qnap")).isEqualTo("iqn.2026-01.dev.caravan:told");
  }

  @Test
  void anIscsiIfaceIsForQnapOnlyAndMustExistBeforeStarting(@TempDir Path dir) throws Exception {
    assumeTrue(System.getenv("CSI_NODE_ID") == null, "CSI_NODE_ID in the environment names the node");
    String[] common = {"--endpoint=unix://" + dir.resolve("csi.sock"), "--http-listen=off",
        "--data-dir=" + dir.resolve("data")};
    ServeCommand file = new ServeCommand();
    new CommandLine(file).parseArgs(concat(common, "--driver=file", "--iscsi-iface=caravan-b"));
    assertThat(file.call()).as("not a qnap driver").isEqualTo(2);
    ServeCommand bad = new ServeCommand();
    new CommandLine(bad).parseArgs(concat(common, "--driver=qnap", "--iscsi-iface=../etc"));
    assertThat(bad.call()).as("not an interface name").isEqualTo(2);
    ServeCommand absent = new ServeCommand();
    new CommandLine(absent).parseArgs(concat(common, "--driver=qnap", "--iscsi-iface=caravan-test-absent-iface"));
    assertThat(Path.of("/etc/iscsi/ifaces/caravan-test-absent-iface")).doesNotExist();
    assertThat(absent.call()).as("an interface with no record has no initiator name to be the node id").isEqualTo(2);
    assertThat(dir.resolve("csi.sock")).doesNotExist();
    assertThat(new CommandLine(new ServeCommand()).getUsageMessage().replaceAll("\\s+", " "))
        .contains("--iscsi-iface=NAME", "/etc/iscsi/ifaces", "initiatorname");
  }

  private static String[] concat(String[] a, String... b) {
    return java.util.stream.Stream.concat(java.util.Arrays.stream(a), java.util.Arrays.stream(b)).toArray(String[]::new);
  }

  @Test
  void theQnapDriverSaysWhatItServes() {
    String usage = new CommandLine(new ServeCommand()).getUsageMessage().replaceAll("\\s+", " ");
    assertThat(usage).contains("qnap").contains("initiator").contains("multipath").doesNotContain("UNIMPLEMENTED")
        .contains("CARAVAN_QNAP_PASSWORD").contains("never from flags");
  }

  @Test
  void iscsiGcTakesOnOrOffAndRefusesAnythingElseBeforeStarting(@TempDir Path dir) throws Exception {
    ServeCommand serve = new ServeCommand();
    CommandLine cli = new CommandLine(serve);
    cli.parseArgs("--iscsi-gc=maybe", "--endpoint=unix://" + dir.resolve("csi.sock"), "--http-listen=off");
    assertThat(serve.call()).isEqualTo(2);
    assertThat(dir.resolve("csi.sock")).doesNotExist();
    assertThat(cli.getUsageMessage().replaceAll("\\s+", " "))
        .contains("--iscsi-gc=on|off", "never deletes", "default: on");
  }

  @Test
  void peerFlagsRefuseAnythingButMutualTlsBeforeStarting(@TempDir Path dir) throws Exception {
    ServeCommand serve = new ServeCommand();
    CommandLine cli = new CommandLine(serve);
    cli.parseArgs("--peer-listen=127.0.0.1:9700", "--peer=n2=10.0.0.2:9700", "--endpoint=unix://" + dir.resolve("csi.sock"),
        "--http-listen=off", "--data-dir=" + dir.resolve("data"));
    assertThat(serve.call()).isEqualTo(2);
    assertThat(dir.resolve("csi.sock")).doesNotExist();
    assertThat(cli.getUsageMessage().replaceAll("\\s+", " "))
        .contains("--peer=NODE=HOST:PORT", "mTLS only", "subjectAltName", "--placement-reserve=SIZE");
  }
}

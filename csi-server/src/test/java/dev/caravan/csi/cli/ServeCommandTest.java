package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.csi.testing.PluginJvm;
import dev.caravan.storage.HostCapabilities;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
  void aQnapNodeWithoutOpenIscsiIsRefusedNamingTheFileAndTheFlag(@TempDir Path dir) throws Exception {
    Path file = Path.of("/etc/iscsi/initiatorname.iscsi");
    assumeTrue(System.getenv("CSI_NODE_ID") == null, "checks a node id taken from " + file + ", not CSI_NODE_ID");
    List<String> serve = List.of("serve", "--driver=qnap", "--endpoint=unix://" + dir.resolve("csi.sock"),
        "--http-listen=off", "--data-dir=" + dir.resolve("data"));
    int exit;
    String said;
    if (!Files.exists(file)) {
      ServeRun ran = ServeRun.call(serve.subList(1, serve.size()).toArray(String[]::new));
      exit = ran.exit();
      said = ran.err();
    } else {
      // A host with open-iscsi (the CI's, which installs it): the plugin runs in a mount namespace of
      // its own where an empty tmpfs hides /etc/iscsi, as on a node without the package.
      assumeTrue(HostCapabilities.current().canMount() && HostCapabilities.current().tool("unshare").isPresent(),
          "hides " + file + " in a private mount namespace, which needs root and unshare(1)");
      List<String> command = new ArrayList<>(List.of("unshare", "--mount", "--propagation", "private", "sh", "-c",
          "mount -t tmpfs none /etc/iscsi && exec \"$@\"", "sh"));
      command.addAll(PluginJvm.caravan(serve));
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).as(said).isTrue();
      exit = p.exitValue();
    }
    assertThat(exit).as(said).isEqualTo(2);
    assertThat(said).contains("cannot read " + file + ": no such file (is open-iscsi installed?)", "--node-id")
        .doesNotContain("Exception");
    assertThat(dir.resolve("csi.sock")).doesNotExist();
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

  @Test
  void theKeyCostFlagsSetNewVolumesCostsAndRefuseValuesOutOfRangeBeforeStarting(@TempDir Path dir)
      throws Exception {
    ServeCommand none = ServeCommand.parse().orElseThrow();
    assertThat(none.luksCost()).isEqualTo(KeySlotCost.DEFAULT);
    assertThat(none.zfsCost()).isEqualTo(Pbkdf2Iters.DEFAULT);
    ServeCommand set = ServeCommand.parse("--luks-iter-time=1", "--zfs-pbkdf2-iters", "100000").orElseThrow();
    assertThat(set.luksCost()).isEqualTo(KeySlotCost.iterTime(Duration.ofMillis(1)));
    assertThat(set.zfsCost()).isEqualTo(new Pbkdf2Iters(100_000));
    ServeCommand small = ServeCommand.parse("--luks-pbkdf-memory=65536").orElseThrow();
    assertThat(small.luksCost()).as("the memory ceiling alone keeps the default time and threads")
        .isEqualTo(new KeySlotCost(Duration.ofSeconds(1), 65536, 4));
    ServeCommand both = ServeCommand.parse("--luks-pbkdf-memory=32", "--luks-iter-time=2").orElseThrow();
    assertThat(both.luksCost()).isEqualTo(new KeySlotCost(Duration.ofMillis(2), 32, 4));

    String[] common = {"--endpoint=unix://" + dir.resolve("csi.sock"), "--http-listen=off",
        "--data-dir=" + dir.resolve("data")};
    for (String bad : List.of("--luks-iter-time=0", "--luks-iter-time=60001", "--luks-pbkdf-memory=31",
        "--luks-pbkdf-memory=4194305", "--zfs-pbkdf2-iters=99999", "--zfs-pbkdf2-iters=2147483648")) {
      ServeCommand serve = ServeCommand.parse(concat(common, bad)).orElseThrow();
      String flag = bad.substring(0, bad.indexOf('='));
      assertThatThrownBy(() -> {
        serve.luksCost();
        serve.zfsCost();
      }).as(bad)
          .isInstanceOf(FlagException.class)
          .hasMessageStartingWith(flag + " '" + bad.substring(bad.indexOf('=') + 1) + "' must be");
      assertThat(serve.call()).as(bad).isEqualTo(2);
    }
    assertThat(refusal(concat(common, "--luks-iter-time=5", "--luks-pbkdf-memory=16")))
        .as("the refusal names the flag that is out of range, not its neighbour")
        .startsWith("caravan: --luks-pbkdf-memory '16' must be a number of KiB from 32 to 4194304");
    assertThatThrownBy(() -> ServeCommand.parse(concat(common, "--luks-iter-time=fast")))
        .isInstanceOf(FlagException.class)
        .hasMessage("--luks-iter-time: 'fast' is not a whole number");
    assertThat(dir.resolve("csi.sock")).doesNotExist();
    assertThat(usage().replaceAll("\\s+", " "))
        .contains("--luks-iter-time=MS", "--iter-time", "1 to 60000 (default: 1000)")
        .contains("--luks-pbkdf-memory=KIB", "--pbkdf-memory", "32 to 4194304 (default: 262144, 256 MiB)")
        .contains("--zfs-pbkdf2-iters=COUNT", "100000 (OpenZFS's minimum)", "(default: 350000)");
  }

  private static String usage() {
    return ServeCommand.FLAGS.usage();
  }

  /** What {@code serve} with {@code args} prints on standard error as it exits with status 2. */
  private static String refusal(String... args) throws Exception {
    ServeRun ran = ServeRun.call(args);
    assertThat(ran.exit()).as(ran.err()).isEqualTo(2);
    return ran.err();
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

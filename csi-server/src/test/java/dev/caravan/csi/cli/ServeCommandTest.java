package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

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

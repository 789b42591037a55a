package dev.caravan.csi.backend.local;

import dev.caravan.csi.testing.TestClassPath;

import static dev.caravan.csi.backend.local.LocalGuest.POOL;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code caravan serve --driver=local} on a host whose zfs module is not a version Caravan's {@code
 * zfs_cmd_t} layout was verified for: it must refuse to start, at once, saying why, instead of
 * sending that module commands of the wrong size. The guest's module is a verified one, so the
 * plugin runs in a private mount namespace where another version is bind-mounted over {@code
 * /sys/module/zfs/version}. Runs in the guest of {@code scripts/guest-test} (root, real ZFS).
 */
class LocalStartGuestTest {
  private Path work;

  // Per test rather than in @BeforeAll, so that elsewhere each test is reported skipped, with the reason.
  @BeforeEach
  void setUp() throws IOException {
    HostRequirements.assumeZfs();
    work = Files.createTempDirectory("caravan-local-start-");
  }

  @AfterEach
  void tearDown() throws IOException {
    if (work == null) {
      return; // skipped before anything was made
    }
    try (Stream<Path> paths = Files.walk(work)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  @Test
  void serveRefusesAnUnverifiedZfsModuleVersion() throws Exception {
    Path version = work.resolve("version");
    Files.writeString(version, "2.4.0-1~bpo12+1\n");
    Path config = work.resolve("caravan.properties");
    Files.writeString(config, "local.pools=" + POOL + "\n");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> serve = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
        "-XX:TieredStopAtLevel=1", "-XX:-CreateCoredumpOnCrash", "-XX:ErrorFile=" + work.resolve("hs_err.log"),
        "-cp", TestClassPath.of(), "dev.caravan.csi.cli.Main", "serve", "--http-listen=off",
        "--driver=local", "--endpoint", "unix://" + work.resolve("csi.sock"), "--node-id", "n1",
        "--data-dir", work.resolve("data").toString(), "--config", config.toString()));
    List<String> command = new ArrayList<>(List.of("unshare", "--mount", "--propagation", "private",
        "sh", "-c", "mount --bind \"$0\" /sys/module/zfs/version && exec \"$@\"", version.toString()));
    command.addAll(serve);

    Process p = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(true).start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).as(out).isTrue();

    assertThat(p.exitValue()).as(out).isEqualTo(1);
    assertThat(out).contains("caravan: cannot start: the local backend cannot start: ZFS is not supported on this"
            + " host: the loaded OpenZFS kernel module is 2.4.0 (/sys/module/zfs/version: '2.4.0-1~bpo12+1')")
        .contains("verified only for OpenZFS 2.2.0-2.2.11, 2.3.0, 2.3.2-2.3.9")
        .contains("native/zfs-cmd/print-layout --check")
        .contains("allowlisted pools: [" + POOL + "]")
        .doesNotContain("\tat ");
    assertThat(Files.exists(work.resolve("hs_err.log"))).as("JVM crash log").isFalse();
    assertThat(Files.exists(work.resolve("csi.sock"))).as("no socket").isFalse();
    assertThat(Files.readString(Path.of("/sys/module/zfs/version")).strip())
        .as("the guest's own namespace still sees the real module").doesNotStartWith("2.4.0");
  }
}

package dev.caravan.csi.backend.local;

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
 * {@code caravan serve --driver=local} refuses to start, in its own JVM, with a clear one-line
 * reason and a non-zero exit, never a crash: on a host without ZFS, and with bad options.
 */
class LocalServeTest {
  private Path work;

  @BeforeEach
  void setUp() throws IOException {
    work = Files.createTempDirectory("caravan-local-serve-");
  }

  @AfterEach
  void tearDown() throws IOException {
    try (Stream<Path> paths = Files.walk(work)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  private record Result(int exit, String output) {}

  private Result serve(String config, String... extra) throws IOException, InterruptedException {
    Path file = work.resolve("caravan.properties");
    Files.writeString(file, config);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
        "-XX:-CreateCoredumpOnCrash", "-XX:ErrorFile=" + work.resolve("hs_err.log"),
        "-cp", System.getProperty("java.class.path"), "dev.caravan.csi.cli.Main", "serve", "--http-listen=off",
        "--driver=local", "--endpoint", "unix://" + work.resolve("csi.sock"), "--node-id", "n1",
        "--data-dir", work.resolve("data").toString(), "--config", file.toString()));
    command.addAll(List.of(extra));
    Process p = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(true).start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as(out).isTrue();
    assertThat(Files.exists(work.resolve("hs_err.log"))).as("JVM crash log").isFalse();
    assertThat(Files.exists(work.resolve("csi.sock"))).as("no socket left behind").isFalse();
    return new Result(p.exitValue(), out);
  }

  @Test
  void refusesToStartWithoutZfs() throws Exception {
    HostRequirements.assumeNoZfsModule("the guest tests cover serving");
    Result r = serve("local.pools=tank\n");
    assertThat(r.exit()).as(r.output()).isEqualTo(1);
    assertThat(r.output()).contains("caravan: cannot start: the local backend cannot start: ")
        .contains("ZFS is not available on this host").contains("allowlisted pools: [tank]")
        .doesNotContain("Exception").doesNotContain("\tat ");
  }

  @Test
  void refusesBadOptionsNamingTheKey() throws Exception {
    Result missing = serve("");
    assertThat(missing.exit()).isEqualTo(1);
    assertThat(missing.output()).contains("caravan: cannot start: the local backend needs local.pools")
        .doesNotContain("\tat ");
    Result unknown = serve("local.pools=tank\nlocal.poolz=x\n");
    assertThat(unknown.exit()).isEqualTo(1);
    assertThat(unknown.output()).contains("unknown local backend option(s) [local.poolz]");
    Result parent = serve("local.pools=tank\nlocal.parent-dataset=../etc\n");
    assertThat(parent.exit()).isEqualTo(1);
    assertThat(parent.output()).contains("local.parent-dataset '../etc'");
  }
}

package dev.caravan.storage.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.NativeLibraryUnavailableException;
import dev.caravan.storage.testing.ForkedJvm;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * On a host without ZFS (no {@code /dev/zfs}: the ZFS module is not loaded) the facade must
 * refuse cleanly, every time, and the JVM must live on: one {@code lzc_*} call after a failed
 * {@code libzfs_core_init()} would abort it.
 */
class ZfsUnavailableTest {
  private static final String EXPECTED =
      "ZFS is not available on this host: /dev/zfs: ENOENT (is the zfs kernel module loaded?)";

  @BeforeAll
  static void onlyWithoutZfs() {
    HostRequirements.assumeNoZfsModule("see ZfsGuestTest");
    assumeTrue(
        NativeLibraries.isAvailable(NativeLibraries.Library.ZFS_CORE),
        "needs libzfs_core installed to get as far as its init");
  }

  @Test
  void openRefusesEveryTimeAndTheJvmLivesOn() {
    for (int attempt = 0; attempt < 3; attempt++) {
      assertThatThrownBy(Zfs::open)
          .isInstanceOf(NativeLibraryUnavailableException.class)
          .hasMessage(EXPECTED);
    }
    assertThatThrownBy(() -> Zfs.open(new ManagedBy("acme:owner", "agent-7")))
        .isInstanceOf(NativeLibraryUnavailableException.class);
  }

  @Test
  void aFreshJvmRefusesAndExitsNormally() throws Exception {
    Result probe = runProbe();
    assertThat(probe.exit()).as(probe.output()).isZero();
    assertThat(probe.output().lines().toList())
        .containsExactly("refused: " + EXPECTED, "refused: " + EXPECTED, "refused: " + EXPECTED,
            "alive");
  }

  @Test
  void withoutTheGuardTheSameHostAbortsTheJvm() throws Exception {
    // The hazard the guard exists for, shown on this host: the library asserts and aborts.
    Result probe = runProbe("unguarded");
    assertThat(probe.output()).contains("init returned 2").doesNotContain("still alive");
    assertThat(probe.exit()).as(probe.output()).isEqualTo(128 + 6); // SIGABRT
  }

  private record Result(int exit, String output) {}

  private static Result runProbe(String... args) throws IOException, InterruptedException {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    List<String> command =
        new java.util.ArrayList<>(
            List.of(
                java.toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1",
                "-XX:-CreateCoredumpOnCrash",
                "-cp",
                ForkedJvm.classPath(ZfsOpenProbe.class),
                ZfsOpenProbe.class.getName()));
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getOutputStream().close();
    byte[] output = process.getInputStream().readAllBytes();
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return new Result(process.exitValue(), new String(output, StandardCharsets.UTF_8));
  }
}

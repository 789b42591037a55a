package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class DhvCommandTest {
  @TempDir Path work;

  @Test
  void installWritesBothPluginsNamingThisJvmAndTheDataDirectory() throws IOException {
    Path plugins = work.resolve("plugins");
    int status = new CommandLine(new Main()).execute("dhv", "install", "--plugin-dir", plugins.toString(),
        "--data-dir", work.resolve("data").toString());
    assertThat(status).isZero();
    for (String id : new String[] {"caravan-file", "caravan-file-deferred"}) {
      String script = Files.readString(plugins.resolve(id));
      assertThat(script).contains("exec '" + Path.of(System.getProperty("java.home"), "bin", "java") + "'")
          .contains("'--data-dir' '" + work.resolve("data") + "'")
          .contains("'--mode' '" + (id.endsWith("deferred") ? "deferred" : "immediate") + "'");
      assertThat(Files.isExecutable(plugins.resolve(id))).isTrue();
    }
  }

  @Test
  void anUnknownDriverIsRefused() {
    int status = new CommandLine(new Main()).execute("dhv", "install", "--plugin-dir", work.toString(),
        "--driver", "nfs");
    assertThat(status).isEqualTo(2);
  }

  /** Backends the Nomad harness does not run as DHV plugins yet are not offered as plugins. */
  @Test
  void backendsNotYetTestedAsPluginsAreRefused() throws IOException {
    for (String driver : List.of("qnap")) {
      int status = new CommandLine(new Main()).execute("dhv", "install", "--plugin-dir", work.toString(),
          "--driver", driver);
      assertThat(status).as(driver).isEqualTo(2);
    }
    try (var written = Files.list(work)) {
      assertThat(written.toList()).as("no plugin written").isEmpty();
    }
  }
}

package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
}

package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintStream;
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
  void keyCostsAreTakenAsServeTakesThemAndOutOfRangeOnesWriteNothing() throws IOException {
    Path plugins = work.resolve("plugins");
    String[] base = {"dhv", "install", "--plugin-dir", plugins.toString(), "--data-dir", work.resolve("data").toString()};
    for (String bad : List.of("--luks-iter-time=0", "--luks-pbkdf-memory=31", "--zfs-pbkdf2-iters=99999")) {
      PrintStream before = System.err;
      java.io.ByteArrayOutputStream printed = new java.io.ByteArrayOutputStream();
      System.setErr(new PrintStream(printed, true, java.nio.charset.StandardCharsets.UTF_8));
      int status;
      try {
        status = new CommandLine(new Main()).execute(concat(base, bad));
      } finally {
        System.setErr(before);
      }
      assertThat(status).as(bad).isEqualTo(2);
      assertThat(printed.toString(java.nio.charset.StandardCharsets.UTF_8)).as(bad)
          .contains(bad.substring(0, bad.indexOf('=')) + " '" + bad.substring(bad.indexOf('=') + 1) + "' must be");
      assertThat(plugins).as("no plugin written for %s", bad).doesNotExist();
    }
    assertThat(new CommandLine(new Main()).execute(concat(base, "--luks-iter-time=250", "--luks-pbkdf-memory=65536",
        "--zfs-pbkdf2-iters=500000"))).isZero();
    for (String id : new String[] {"caravan-file", "caravan-file-deferred"}) {
      assertThat(Files.readString(plugins.resolve(id))).contains("'--luks-iter-time' '250'")
          .contains("'--luks-pbkdf-memory' '65536'").contains("'--zfs-pbkdf2-iters' '500000'");
    }
  }

  private static String[] concat(String[] base, String... more) {
    List<String> all = new java.util.ArrayList<>(List.of(base));
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }

  @Test
  void anUnknownDriverIsRefused() {
    int status = new CommandLine(new Main()).execute("dhv", "install", "--plugin-dir", work.toString(),
        "--driver", "nfs");
    assertThat(status).isEqualTo(2);
  }

  /** qnap's plugins reach the appliance only through a root-only credentials file, named by path. */
  @Test
  void qnapNeedsAnOwnerOnlyCredentialsFileAndWritesOnlyItsPath() throws IOException {
    Path plugins = work.resolve("plugins");
    String[] base = {"dhv", "install", "--plugin-dir", plugins.toString(), "--driver", "qnap",
        "--option", "url=https://nas.example:443", "--option", "portals=10.0.0.5:3260"};
    assertThat(new CommandLine(new Main()).execute(base)).as("no credentials file").isEqualTo(2);
    Path creds = work.resolve("qnap.properties");
    Files.writeString(creds, "user=admin\npassword=s3cret-value\n");
    Files.setPosixFilePermissions(creds, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
    List<String> args = new java.util.ArrayList<>(List.of(base));
    args.addAll(List.of("--option", "credentials-file=" + creds));
    assertThat(new CommandLine(new Main()).execute(args.toArray(String[]::new))).as("a file others can read")
        .isEqualTo(2);
    assertThat(plugins).as("no plugin written").doesNotExist();

    Files.setPosixFilePermissions(creds, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    assertThat(new CommandLine(new Main()).execute(args.toArray(String[]::new))).isZero();
    for (String id : new String[] {"caravan-qnap", "caravan-qnap-deferred"}) {
      assertThat(Files.readString(plugins.resolve(id))).contains("'credentials-file=" + creds + "'")
          .contains("'--driver' 'qnap'").doesNotContain("s3cret-value");
    }
  }
}

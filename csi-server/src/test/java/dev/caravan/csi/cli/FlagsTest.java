package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** serve's command line, parsed by its own table; what picocli did before is the behaviour kept. */
class FlagsTest {
  @Test
  void bothSpellingsOfAValueAndRepeatableFlagsParse() {
    ServeCommand serve = ServeCommand.parse("--driver", "local", "--max-volumes=7", "--metrics=false",
        "--peer=a=h:1", "--peer", "b=h:2", "--data-dir=/d").orElseThrow();
    assertThat(serve.driver).isEqualTo("local");
    assertThat(serve.maxVolumes).isEqualTo(7L);
    assertThat(serve.metrics).isFalse();
    assertThat(serve.peers).containsExactly("a=h:1", "b=h:2");
    assertThat(serve.dataDir).isEqualTo(Path.of("/d"));
  }

  @Test
  void aBadCommandLineIsRefusedNamingTheFlagAndTheRule() {
    record Case(List<String> args, String rule) {}
    for (Case c : List.of(
        new Case(List.of("--drivr=file"), "unknown flag '--drivr'"),
        new Case(List.of("--max-volume=3"), "unknown flag '--max-volume' (did you mean --max-volumes?)"),
        new Case(List.of("--max-volumes=ten"), "--max-volumes: 'ten' is not a whole number"),
        new Case(List.of("--metrics=maybe"), "--metrics: 'maybe' is not true or false"),
        new Case(List.of("--driver=file", "--driver=local"), "--driver is given twice; it takes one value"),
        new Case(List.of("--endpoint"), "--endpoint needs a value: --endpoint=unix:///PATH"),
        new Case(List.of("file"), "unexpected argument 'file'"))) {
      assertThatThrownBy(() -> ServeCommand.parse(c.args().toArray(String[]::new))).as(c.args().toString())
          .isInstanceOf(FlagException.class).hasMessageContaining(c.rule());
    }
  }

  @Test
  void helpListsEveryFlagWithItsLabelAndVersionPrintsTheVersion() {
    String usage = captureOut(() -> assertThat(ServeCommand.parse("--help")).isEmpty());
    for (Flag<ServeCommand> f : ServeCommand.FLAGS.all()) {
      assertThat(usage).contains(f.name() + "=" + f.label());
    }
    assertThat(usage).startsWith("Usage: caravan serve").contains(ServeCommand.SUMMARY);
    assertThat(captureOut(() -> assertThat(ServeCommand.parse("-V")).isEmpty())).startsWith("caravan ");
  }

  @Test
  void aBadFlagExitsTwoWithOneLineAndNoStackTrace() {
    PrintStream saved = System.err;
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    int exit;
    try {
      exit = Main.execute("serve", "--max-volumes=-");
    } finally {
      System.setErr(saved);
    }
    assertThat(exit).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo("caravan serve: --max-volumes: '-' is not a whole number" + System.lineSeparator());
  }

  @Test
  void theTopLevelHelpStillListsServe() {
    String help = captureOut(() -> assertThat(Main.commandLine().execute("--help")).isZero());
    assertThat(help).contains("serve", ServeCommand.SUMMARY, "inspect", "doctor");
  }

  /** The point of the table: serve's path never loads picocli (a forked JVM lists the classes it loads). */
  @Test
  void serveNeverLoadsPicocli() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process p = new ProcessBuilder(java.toString(), "-Xlog:class+load=info", "-cp",
        System.getProperty("java.class.path"), Main.class.getName(), "serve", "--help")
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out).contains("Usage: caravan serve").contains("dev.caravan.csi.cli.Flags ")
        .doesNotContain("picocli.");
  }

  private static String captureOut(Runnable r) {
    PrintStream saved = System.out;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      r.run();
    } finally {
      System.setOut(saved);
    }
    return out.toString(StandardCharsets.UTF_8);
  }
}

package dev.caravan.storage.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.ToolException;
import dev.caravan.storage.testing.ForkedJvm;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class ToolRunnerTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  @RegisterExtension final Scratch scratch = new Scratch();

  @Test
  void capturesOutput() {
    ToolResult result = ToolRunner.run(List.of("printf", "%s|", "a b", "$HOME", ";"), TIMEOUT);

    assertThat(result.exitCode()).isZero();
    assertThat(result.stdout()).isEqualTo("a b|$HOME|;|"); // arguments, not a shell line
    assertThat(result.stderr()).isEmpty();
    assertThat(result.command()).containsExactly("printf", "%s|", "a b", "$HOME", ";");
    assertThat(result.elapsed()).isPositive();
  }

  @Test
  void aFailureCarriesExitCodeAndStderr() {
    assertThatThrownBy(() -> ToolRunner.run(List.of("ls", "/no/such/dir"), TIMEOUT))
        .isInstanceOfSatisfying(
            ToolException.class,
            e -> {
              assertThat(e.exitCode()).isEqualTo(2);
              assertThat(e.stderr()).contains("/no/such/dir");
              assertThat(e.command()).containsExactly("ls", "/no/such/dir");
              assertThat(e)
                  .hasMessageContaining("exited with 2")
                  .hasMessageContaining("/no/such/dir");
            });
  }

  @Test
  void stdinIsEmpty() {
    assertThat(ToolRunner.run(List.of("cat"), TIMEOUT).stdout()).isEmpty();
  }

  @Test
  void aTimeoutKillsTheProcess() throws Exception {
    Path pidFile = scratch.dir().resolve("pid");
    List<String> command =
        List.of("sh", "-c", "echo $$ > " + pidFile + "; echo started >&2; exec sleep 600");

    assertThatThrownBy(() -> ToolRunner.run(command, Duration.ofMillis(500)))
        .isInstanceOfSatisfying(
            ToolException.class,
            e -> {
              assertThat(e.exitCode()).isEqualTo(-1);
              assertThat(e).hasMessageContaining("timed out");
              assertThat(e.stderr()).contains("started");
            });

    long pid = Long.parseLong(Files.readString(pidFile).strip());
    assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
  }

  @Test
  void aMissingBinaryIsAToolException() {
    assertThatThrownBy(() -> ToolRunner.run(List.of("no-such-tool-caravan"), TIMEOUT))
        .isInstanceOfSatisfying(ToolException.class, e -> assertThat(e.exitCode()).isEqualTo(-1));
  }

  @Test
  void atATerminalTheToolReadsWhatWasTypedThenEndOfFile() {
    String script =
        "test -t 0 && test -t 1 && test -t 2 && echo terminal;"
            + " read answer; echo \"answer=$answer\"; cat; echo end-of-file";

    ToolResult result =
        ToolRunner.runAtTerminal(List.of("sh", "-c", script), "n\n", Map.of(), TIMEOUT);

    // No echo of the typed "n", no \r added to each line.
    assertThat(result.stdout()).isEqualTo("terminal\nanswer=n\nend-of-file\n");
    assertThat(result.stderr()).isEmpty();
    assertThat(result.exitCode()).isZero();
  }

  @Test
  void aPartialLineTypedIsReadToo() {
    ToolResult result =
        ToolRunner.runAtTerminal(
            List.of("sh", "-c", "cat; echo ."), "no newline", Map.of(), TIMEOUT);

    assertThat(result.stdout()).isEqualTo("no newline.\n");
  }

  @Test
  void atATerminalTheToolRunsInItsOwnSessionWithNothingElseInherited() {
    // Each tool looks at itself: the process that was started, not a shell's child.
    String stat = atTerminal("cat", "/proc/self/stat");
    // "pid (comm) state ppid pgrp session tty_nr ..."
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ", -1);
    assertThat(fields[3]).as("session").isEqualTo(stat.substring(0, stat.indexOf(' ')));
    assertThat(fields[4]).as("controlling terminal").isEqualTo("0");

    // glibc keeps the two signals it reserves (32 and 33) ignored in a child it starts.
    assertThat(atTerminal("grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"))
        .isEqualTo("SigBlk:\t0000000000000000\nSigIgn:\t0000000180000000\n");

    // ls's own descriptor 3 is the directory it lists.
    assertThat(atTerminal("ls", "-1", "/proc/self/fd")).isEqualTo("0\n1\n2\n3\n");
  }

  private static String atTerminal(String... command) {
    return ToolRunner.runAtTerminal(List.of(command), "", Map.of(), TIMEOUT).stdout();
  }

  @Test
  void atATerminalTheEnvironmentIsOursPlusTheGivenVariables() {
    ToolResult result =
        ToolRunner.runAtTerminal(
            List.of("sh", "-c", "echo \"$CARAVAN_TOOL_TEST|$HOME\""),
            "",
            Map.of("CARAVAN_TOOL_TEST", "set"),
            TIMEOUT);

    assertThat(result.stdout()).isEqualTo("set|" + System.getenv("HOME") + "\n");
  }

  @Test
  void atATerminalAFailureCarriesExitCodeAndWhatTheTerminalShowed() {
    List<String> command = List.of("sh", "-c", "echo out; echo err >&2; exit 3");

    assertThatThrownBy(() -> ToolRunner.runAtTerminal(command, "", Map.of(), TIMEOUT))
        .isInstanceOfSatisfying(
            ToolException.class,
            e -> {
              assertThat(e.exitCode()).isEqualTo(3);
              assertThat(e.stderr()).isEqualTo("out\nerr\n");
              assertThat(e.command()).isEqualTo(command);
            });
  }

  @Test
  void atATerminalATimeoutKillsTheProcess() throws Exception {
    Path pidFile = scratch.dir().resolve("pid");
    List<String> command =
        List.of("sh", "-c", "echo $$ > " + pidFile + "; echo started; exec sleep 600");

    assertThatThrownBy(
            () -> ToolRunner.runAtTerminal(command, "", Map.of(), Duration.ofMillis(500)))
        .isInstanceOfSatisfying(
            ToolException.class,
            e -> {
              assertThat(e.exitCode()).isEqualTo(-1);
              assertThat(e).hasMessageContaining("timed out");
              assertThat(e.stderr()).contains("started");
            });

    long pid = Long.parseLong(Files.readString(pidFile).strip());
    assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
  }

  @Test
  void atATerminalAMissingBinaryIsAToolException() {
    assertThatThrownBy(
            () -> ToolRunner.runAtTerminal(List.of("no-such-tool-caravan"), "", Map.of(), TIMEOUT))
        .isInstanceOfSatisfying(
            ToolException.class,
            e -> {
              assertThat(e.exitCode()).isEqualTo(-1);
              assertThat(e).hasMessageContaining("cannot start").hasMessageContaining("ENOENT");
            });
  }

  /**
   * A JVM that leads its session and has no controlling terminal (a container's first process) is
   * the one that would acquire a terminal it opens without O_NOCTTY, and be sent SIGHUP when the
   * terminal is closed. SessionLeader runs a tool at a terminal in such a JVM.
   */
  @Test
  void aJvmLeadingItsSessionGainsNoControllingTerminal() {
    HostRequirements.assumeTool("setsid", "util-linux");
    String java = ProcessHandle.current().info().command().orElseThrow();
    List<String> command =
        List.of(
            "setsid",
            "--wait",
            java,
            "--enable-native-access=ALL-UNNAMED",
            "-cp",
            ForkedJvm.classPath(SessionLeader.class),
            SessionLeader.class.getName());

    ToolResult result = ToolRunner.run(command, Duration.ofMinutes(2));

    assertThat(result.stdout())
        .isEqualTo("leader without terminal\ntool ran\nterminal during: 0\nterminal after: 0\n");
  }

  /**
   * The plugin's own secrets (the appliance's password, Nomad's token) are in its environment; a
   * tool it starts never needs them, and a tool's environment is readable to whoever may read its
   * /proc entry: the child's environment is the parent's without them.
   */
  @Test
  void aChildsEnvironmentHoldsNoSecretOfTheParent() {
    String java = ProcessHandle.current().info().command().orElseThrow();
    List<String> command =
        List.of(
            "env",
            "CARAVAN_QNAP_PASSWORD=pw-in-parent",
            "CARAVAN_QNAP_USER=admin-in-parent",
            "NOMAD_TOKEN=token-in-parent",
            "SOME_API_SECRET=secret-in-parent",
            "CARAVAN_HARMLESS=kept",
            java,
            "--enable-native-access=ALL-UNNAMED",
            "-cp",
            ForkedJvm.classPath(ChildEnvironmentPrinter.class),
            ChildEnvironmentPrinter.class.getName());

    String out = ToolRunner.run(command, Duration.ofMinutes(2)).stdout();

    assertThat(out).contains("== run").contains("== runAtTerminal").contains("ADDED=1");
    assertThat(out.split("== runAtTerminal", -1))
        .allSatisfy(
            part ->
                assertThat(part)
                    .contains("CARAVAN_HARMLESS=kept")
                    .contains("PATH=")
                    .doesNotContain("pw-in-parent")
                    .doesNotContain("admin-in-parent")
                    .doesNotContain("token-in-parent")
                    .doesNotContain("secret-in-parent"));
  }
}

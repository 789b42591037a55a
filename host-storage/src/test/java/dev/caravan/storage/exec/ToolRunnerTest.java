package dev.caravan.storage.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.ToolException;
import dev.caravan.storage.testing.Scratch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
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
}

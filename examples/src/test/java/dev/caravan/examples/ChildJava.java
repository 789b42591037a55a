package dev.caravan.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM of this JDK, for what only a JVM's command line can set: native access, the module
 * path, a single source file to run.
 */
final class ChildJava {
  private ChildJava() {}

  record Result(int exit, String output) {}

  /** Runs {@code java} with {@code arguments}; standard output and error together. */
  static Result run(List<String> arguments) throws IOException, InterruptedException {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    List<String> command = new ArrayList<>(List.of(java.toString(), "-XX:TieredStopAtLevel=1"));
    command.addAll(arguments);
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getOutputStream().close();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).as(output).isTrue();
    return new Result(process.exitValue(), output);
  }

  /** The jar or classes directory {@code c} was loaded from. */
  static Path location(Class<?> c) {
    try {
      return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException("the location of " + c, e);
    }
  }
}

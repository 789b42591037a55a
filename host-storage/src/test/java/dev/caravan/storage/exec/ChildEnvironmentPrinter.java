package dev.caravan.storage.exec;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Run by {@code ToolRunnerTest} in a JVM of its own, started with secrets in its environment: prints
 * the environment a tool started by {@link ToolRunner#run} sees, then the one a tool started by
 * {@link ToolRunner#runAtTerminal} sees.
 */
final class ChildEnvironmentPrinter {
  private ChildEnvironmentPrinter() {}

  public static void main(String[] args) {
    System.out.println("== run");
    System.out.print(ToolRunner.run(List.of("env"), Duration.ofSeconds(30)).stdout());
    System.out.println("== runAtTerminal");
    System.out.print(
        ToolRunner.runAtTerminal(List.of("env"), "", Map.of("ADDED", "1"), Duration.ofSeconds(30))
            .stdout());
  }
}

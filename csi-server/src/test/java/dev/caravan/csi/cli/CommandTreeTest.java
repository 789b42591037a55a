package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.support.BuildInfo;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every command and subcommand, found by walking the tree {@code caravan --help} lists, answers --help
 * and --version, through {@link Main#execute} as the process runs them ({@code serve} with its own
 * flag table, the others through picocli).
 */
class CommandTreeTest {
  private record Result(int exit, String out, String err) {}

  private static Result run(List<String> args) {
    PrintStream savedOut = System.out;
    PrintStream savedErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      int exit = Main.execute(args.toArray(String[]::new));
      return new Result(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(savedOut);
      System.setErr(savedErr);
    }
  }

  private static void walk(CommandLine c, List<String> path, List<List<String>> into) {
    into.add(path);
    // getSubcommands() lists a command once per alias: walk each command once, by its name.
    c.getSubcommands().values().stream().map(CommandLine::getCommandName).distinct().forEach(name -> {
      List<String> next = new ArrayList<>(path);
      next.add(name);
      walk(c.getSubcommands().get(name), next, into);
    });
  }

  @Test
  void everyCommandAnswersHelpAndVersionWithExitZero() {
    List<List<String>> commands = new ArrayList<>();
    walk(Main.commandLine(), List.of(), commands);
    assertThat(commands).as("the tree has the commands we know of, and more may come")
        .contains(List.of("serve"), List.of("inspect"), List.of("dhv", "install"), List.of("version"));
    for (List<String> command : commands) {
      List<String> help = new ArrayList<>(command);
      help.add("--help");
      Result h = run(help);
      assertThat(h.exit()).as(help + ": " + h.err()).isZero();
      String name = command.isEmpty() ? "caravan" : command.getLast();
      assertThat(h.out()).as(String.join(" ", help)).contains("Usage: ").contains(name).contains("--help", "--version");
      List<String> version = new ArrayList<>(command);
      version.add("--version");
      Result v = run(version);
      assertThat(v.exit()).as(version + ": " + v.err()).isZero();
      assertThat(v.out().strip()).as(String.join(" ", version)).isEqualTo("caravan " + BuildInfo.version());
    }
  }

  @Test
  void aMissingArgumentIsStillAnError() {
    Result r = run(List.of("inspect"));
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).contains("VOLUME_ID");
  }
}

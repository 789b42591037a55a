package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.support.BuildInfo;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Every command and subcommand, found by walking picocli's tree, answers --help and --version. */
class CommandTreeTest {
  private record Result(int exit, String out, String err) {}

  private static Result run(List<String> args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine root = new CommandLine(new Main());
    root.setOut(new PrintWriter(out, true));
    root.setErr(new PrintWriter(err, true));
    int exit = root.execute(args.toArray(String[]::new));
    return new Result(exit, out.toString(), err.toString());
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
    walk(new CommandLine(new Main()), List.of(), commands);
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

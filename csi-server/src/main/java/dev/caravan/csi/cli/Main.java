package dev.caravan.csi.cli;

import dev.caravan.csi.support.BuildInfo;
import java.util.logging.ConsoleHandler;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code caravan} command. Its {@code --help} and {@code --version} are inherited by every
 * subcommand, at any depth ({@code scope = INHERIT}), so a command added later has them too.
 */
@Command(
    name = "caravan",
    scope = CommandLine.ScopeType.INHERIT,
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "Caravan: a Nomad-native CSI storage driver.",
    subcommands = {InspectCommand.class, StatsCommand.class, DoctorCommand.class, DemoCommand.class, DhvCommand.class,
        VersionCommand.class})
public final class Main implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    FatalErrors.install();
    configureLogging();
    System.exit(execute(args));
  }

  /**
   * Runs one {@code caravan} command line and returns its exit status. {@code serve} is parsed by its
   * own {@link Flags} table and never builds picocli's model (see {@link Flags} for why); every other
   * command goes through picocli.
   */
  public static int execute(String... args) {
    if (args.length > 0 && args[0].equals("serve")) {
      return ServeCommand.run(java.util.Arrays.copyOfRange(args, 1, args.length));
    }
    return commandLine().execute(args);
  }

  /** picocli's model of every command but serve, which appears in the listing with its summary. */
  static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new Main());
    CommandLine.Model.CommandSpec serve = CommandLine.Model.CommandSpec.create().name("serve");
    serve.usageMessage().description(ServeCommand.SUMMARY + " Its flags: caravan serve --help.");
    cli.addSubcommand("serve", new CommandLine(serve));
    return cli;
  }

  static String versionLine() {
    return "caravan " + BuildInfo.version();
  }

  /**
   * One line per record on stderr: time, level, logger, message. An operator's own
   * {@code java.util.logging.SimpleFormatter.format}, or a formatter of their own in a logging config
   * file, is kept; otherwise the console's SimpleFormatter is replaced by {@link LogLineFormatter},
   * which makes the same text without {@code String.format}.
   */
  static void configureLogging() {
    if (System.getProperty("java.util.logging.SimpleFormatter.format") == null) {
      System.setProperty("java.util.logging.SimpleFormatter.format", LogLineFormatter.PATTERN);
      for (Handler h : Logger.getLogger("").getHandlers()) {
        if (h instanceof ConsoleHandler && h.getFormatter() instanceof SimpleFormatter) {
          h.setFormatter(new LogLineFormatter());
        }
      }
    }
    // grpc asks Netty for SO_KEEPALIVE, which unix sockets do not have; Netty warns on every connection.
    QUIET.setLevel(Level.SEVERE);
  }

  private static final Logger QUIET =
      Logger.getLogger("io.grpc.netty.shaded.io.netty.bootstrap");

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** Version for {@code --version}. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {versionLine()};
    }
  }
}

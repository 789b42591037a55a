package dev.caravan.csi.cli;

import dev.caravan.csi.BuildInfo;
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
    subcommands = {ServeCommand.class, InspectCommand.class, StatsCommand.class, DoctorCommand.class, DemoCommand.class, DhvCommand.class,
        VersionCommand.class})
public final class Main implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    configureLogging();
    System.exit(new CommandLine(new Main()).execute(args));
  }

  /** One line per record on stderr: time, level, logger, message. */
  static void configureLogging() {
    if (System.getProperty("java.util.logging.SimpleFormatter.format") == null) {
      System.setProperty(
          "java.util.logging.SimpleFormatter.format", "%1$tFT%1$tT.%1$tL %4$s %3$s %5$s%6$s%n");
    }
    // grpc asks Netty for SO_KEEPALIVE, which unix sockets do not have; Netty warns on every connection.
    QUIET.setLevel(java.util.logging.Level.SEVERE);
  }

  private static final java.util.logging.Logger QUIET =
      java.util.logging.Logger.getLogger("io.grpc.netty.shaded.io.netty.bootstrap");

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** Version for {@code --version}. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"caravan " + BuildInfo.version()};
    }
  }
}

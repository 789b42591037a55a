package dev.caravan.csi.cli;

import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.csi.dhv.DhvMain;
import dev.caravan.csi.dhv.DhvInstaller;
import java.io.File;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code caravan dhv}: Caravan as a Nomad Dynamic Host Volume plugin. */
@Command(name = "dhv", description = "Nomad Dynamic Host Volume plugins (Nomad 1.10+).",
    subcommands = {DhvCommand.Install.class})
final class DhvCommand implements Runnable {
  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** {@code caravan dhv install}. */
  @Command(name = "install", description = {
      "Writes the plugin executables caravan-<driver> (immediate mode) and caravan-<driver>-deferred",
      "(deferred binding, docs/dhv-deferred-binding.md) into Nomad's host_volume_plugin_dir.",
      "Run it again after moving or upgrading Caravan or the JDK: the executables name both by path."})
  static final class Install implements Callable<Integer> {
    @Option(names = "--plugin-dir", required = true, description = "Nomad's host_volume_plugin_dir.")
    Path pluginDir;

    @Option(names = "--driver", description = "Backend (default: file; local for ZFS zvols; qnap for LUNs on a QNAP"
        + " appliance, whose qnap options are given as --option key=value: url, portals, credentials-file (required:"
        + " a root-only properties file with user and password, since Nomad gives plugins no environment) ...).")
    String driver = "file";

    @Option(names = "--data-dir", description = "Where volumes and records live (default: /var/lib/caravan/dhv/<driver>).")
    Path dataDir;

    @Option(names = "--option", paramLabel = "KEY=VALUE", description = "A backend option, repeatable.")
    Map<String, String> options = new LinkedHashMap<>();

    @Option(names = "--passphrase-file", paramLabel = "FILE", description = "A file only its owner can read"
        + " holding the passphrase of volumes created with parameter encryption=on (Nomad gives DHV plugins no"
        + " secrets; docs/encryption.md)."
        + " Without it, encryption=on is refused. A rotation puts the passphrase it replaces in FILE.previous.")
    Path passphraseFile;

    @Option(names = "--luks-iter-time", paramLabel = "MS", description = "file and qnap: how long opening the LUKS2"
        + " key slot of a new encrypted volume takes: caravan serve's flag of the same name, its range and default.")
    Long luksIterTime;

    @Option(names = "--luks-pbkdf-memory", paramLabel = "KIB", description = "file and qnap: the most memory the"
        + " argon2id of a new LUKS2 key slot may use: caravan serve's flag of the same name, its range and default.")
    Long luksPbkdfMemory;

    @Option(names = "--zfs-pbkdf2-iters", paramLabel = "COUNT", description = "local: the pbkdf2iters of new"
        + " encrypted volumes: caravan serve's flag of the same name, its range and default.")
    Long zfsPbkdf2Iters;

    @Option(names = "--java", description = "The java launcher the plugins run (default: this one).")
    Path java;

    @Option(names = "--class-path", description = "Where Caravan is (default: this process's class path).")
    String classPath;

    @Override
    public Integer call() {
      if (!DhvMain.DRIVERS.contains(driver)) {
        System.err.println("caravan dhv install: --driver must be one of " + DhvMain.DRIVERS);
        return 2;
      }
      Path launcher = java != null ? java : Path.of(System.getProperty("java.home"), "bin", "java");
      Path data = dataDir != null ? dataDir : Path.of("/var/lib/caravan/dhv", driver);
      String cp = classPath != null ? classPath : absolute(System.getProperty("java.class.path"));
      List<Path> written;
      try {
        KeyCosts costs = KeyCosts.DEFAULT;
        if (luksIterTime != null) {
          costs = costs.withLuksIterTime(luksIterTime);
        }
        if (luksPbkdfMemory != null) {
          costs = costs.withLuksPbkdfMemory(luksPbkdfMemory);
        }
        if (zfsPbkdf2Iters != null) {
          costs = costs.withZfs(KeyCosts.zfsPbkdf2Iters(zfsPbkdf2Iters));
        }
        DhvInstaller installer = new DhvInstaller(launcher.toAbsolutePath(), cp, data.toAbsolutePath(), options,
            Optional.ofNullable(passphraseFile).map(Path::toAbsolutePath), costs);
        written = installer.install(pluginDir.toAbsolutePath(), driver);
      } catch (IllegalArgumentException e) {
        System.err.println("caravan dhv install: " + e.getMessage());
        return 2;
      }
      written.forEach(p -> System.out.println("wrote " + p));
      return 0;
    }

    private static String absolute(String classPath) {
      return Arrays.stream(classPath.split(File.pathSeparator))
          .map(e -> Path.of(e).toAbsolutePath().toString())
          .collect(Collectors.joining(File.pathSeparator));
    }
  }
}

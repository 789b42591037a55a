package dev.caravan.csi.cli;

import dev.caravan.csi.backend.Backends;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code caravan doctor}: the preflight a node operator runs before deploying the plugin. */
@Command(name = "doctor", description = {
    "Check this node for what the driver needs: kernel features, the libraries the bindings load, tools,",
    "pools (local), iscsid and multipathd (qnap), the Nomad mount root, permissions and the data directory.",
    "Each line is OK, WARN or FAIL with the fix; the exit code is 1 when a line FAILs."})
final class DoctorCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Option(names = "--driver", description = "file, local or qnap (default: file).")
  String driver = "file";

  @Option(names = "--data-dir", description = "The plugin's state directory (default: /var/lib/caravan/<driver>).")
  Path dataDir;

  @Option(names = "--mount-root", description = "Where Nomad has CSI volumes mounted: <client state_dir>/csi"
      + " (default: /opt/nomad/data/client/csi).")
  Path mountRoot = Path.of("/opt/nomad/data/client/csi");

  @Option(names = "--pool", paramLabel = "POOL", description = "local: a pool the plugin is allowed to use; repeatable.")
  List<String> pools = new ArrayList<>();

  @Override
  public Integer call() {
    if (!Backends.DRIVERS.contains(driver)) {
      System.err.println("caravan doctor: --driver must be one of " + String.join(", ", Backends.DRIVERS));
      return 2;
    }
    List<Preflight.Check> checks = Preflight.run(driver,
        dataDir != null ? dataDir : Path.of("/var/lib/caravan", driver), mountRoot, pools);
    PrintWriter out = spec.commandLine().getOut();
    out.println("caravan doctor --driver " + driver);
    checks.forEach(c -> out.println(c.line()));
    long failed = checks.stream().filter(c -> c.status() == Preflight.Status.FAIL).count();
    long warned = checks.stream().filter(c -> c.status() == Preflight.Status.WARN).count();
    out.println(failed == 0 ? "ready for --driver " + driver + (warned > 0 ? " (" + warned + " warning(s))" : "")
        : failed + " check(s) failed: fix them before deploying --driver " + driver);
    out.flush();
    return failed == 0 ? 0 : 1;
  }
}

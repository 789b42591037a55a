package dev.caravan.csi.cli;

import dev.caravan.csi.drivers.Backends;
import dev.caravan.csi.backend.local.LocalBackend;
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
    "pools (local), iscsid and multipathd (qnap), the Nomad mount root, permissions and the data directory;",
    "with --peer-tls-*, the peer certificate as serve checks it before it starts (subjectAltName holds the node",
    "id, the key is its key, it chains to the CA, its extended key usage, its expiry).",
    "Each line is OK, WARN or FAIL with the fix; the exit code is 1 when a line FAILs."})
final class DoctorCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  private static final Path NOMAD_MOUNT_ROOT = Path.of("/opt/nomad/data/client/csi");

  @Option(names = "--config", paramLabel = "FILE", description = "The file `caravan serve --config` reads: check the"
      + " driver, data directory, first allowed root and pools it sets. The flags below win over it.")
  Path config;

  @Option(names = "--driver", description = "file, local or qnap (default: file).")
  String driver;

  @Option(names = "--data-dir", description = "The plugin's state directory (default: /var/lib/caravan/<driver>).")
  Path dataDir;

  @Option(names = "--mount-root", description = "Where Nomad has CSI volumes mounted: <client state_dir>/csi"
      + " (default: /opt/nomad/data/client/csi).")
  Path mountRoot;

  @Option(names = "--pool", paramLabel = "POOL", description = "local: a pool the plugin is allowed to use; repeatable.")
  List<String> pools = new ArrayList<>();

  @Option(names = "--node-id", description = "The node id the peer certificate must name (default: as serve:"
      + " $CSI_NODE_ID, else the hostname).")
  String nodeId;

  @Option(names = "--peer-tls-cert", description = "serve's --peer-tls-cert: check it with the two below.")
  Path peerTlsCert;

  @Option(names = "--peer-tls-key", description = "serve's --peer-tls-key.")
  Path peerTlsKey;

  @Option(names = "--peer-tls-ca", description = "serve's --peer-tls-ca.")
  Path peerTlsCa;

  @Override
  public Integer call() {
    // The config is read exactly as serve reads it, so doctor checks what serve would use.
    ServeCommand serve = new ServeCommand();
    if (config != null) {
      serve.config = config;
      if (serve.applyConfig() != 0) {
        return 2;
      }
    }
    String drv = first(driver, serve.driver, "file");
    if (!Backends.DRIVERS.contains(drv)) {
      System.err.println("caravan doctor: --driver must be one of " + String.join(", ", Backends.DRIVERS));
      return 2;
    }
    List<String> allowlisted = pools;
    if (allowlisted.isEmpty() && drv.equals("local") && !serve.backendOptions.isEmpty()) {
      try {
        allowlisted = LocalBackend.allowlistedPools(serve.backendOptions);
      } catch (IllegalArgumentException e) {
        System.err.println("caravan doctor: " + config + ": " + e.getMessage());
        return 2;
      }
    }
    Path root = first(mountRoot, serve.allowedRoots.isEmpty() ? null : serve.allowedRoots.getFirst(),
        NOMAD_MOUNT_ROOT);
    Path data = first(dataDir, serve.dataDir, ServeCommand.defaultDataDir(drv));
    List<Preflight.Check> checks = new ArrayList<>(Preflight.run(drv, data, root, allowlisted));
    checks.add(Preflight.journal(serve.journalDir, data));
    if (drv.equals("qnap") && serve.backendOptions.containsKey("url")) {
      checks.addAll(Preflight.applianceFence(serve.backendOptions, data));
    }
    Path cert = first(peerTlsCert, serve.peerTlsCert, null);
    Path key = first(peerTlsKey, serve.peerTlsKey, null);
    Path ca = first(peerTlsCa, serve.peerTlsCa, null);
    if (cert != null || key != null || ca != null) {
      if (cert == null || key == null || ca == null) {
        System.err.println("caravan doctor: the peer credentials are checked together: give --peer-tls-cert,"
            + " --peer-tls-key and --peer-tls-ca");
        return 2;
      }
      if (nodeId != null) {
        serve.nodeId = nodeId;
      }
      // Peers are for the file and local drivers, whose node id is the flag, CSI_NODE_ID or the hostname.
      checks.addAll(Preflight.peer(cert, key, ca, serve.nodeId("file")));
    }
    PrintWriter out = spec.commandLine().getOut();
    out.println("caravan doctor --driver " + drv);
    checks.forEach(c -> out.println(c.line()));
    long failed = checks.stream().filter(c -> c.status() == Preflight.Status.FAIL).count();
    long warned = checks.stream().filter(c -> c.status() == Preflight.Status.WARN).count();
    out.println(failed == 0 ? "ready for --driver " + drv + (warned > 0 ? " (" + warned + " warning(s))" : "")
        : failed + " check(s) failed: fix them before deploying --driver " + drv);
    out.flush();
    return failed == 0 ? 0 : 1;
  }

  private static <T> T first(T flag, T configured, T fallback) {
    return flag != null ? flag : configured != null ? configured : fallback;
  }
}

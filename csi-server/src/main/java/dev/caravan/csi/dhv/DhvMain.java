package dev.caravan.csi.dhv;

import dev.caravan.csi.support.Failures;
import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.csi.support.BuildInfo;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.support.Json;
import dev.caravan.storage.iscsi.Iscsi;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * The JVM side of a Caravan DHV plugin, which the wrapper {@link DhvInstaller} writes {@code exec}s:
 * {@code DhvMain --driver file --mode immediate --data-dir DIR [--option key=value]... OPERATION}.
 * Standard output carries exactly one JSON object (the result, or {@code {"error": ...}}), everything
 * else goes to standard error; the exit status is 0 or one of {@link DhvException}'s.
 */
public final class DhvMain {
  /**
   * The backends offered as DHV plugins: those whose operations are tested (file on the host; local
   * and qnap in the guest, qnap's controller half on the host against the simulated appliance).
   */
  public static final List<String> DRIVERS = List.of("file", "local", "qnap");

  /** This node's identity on network storage: its iSCSI initiator name, which a qnap target's ACL admits. */
  static final Supplier<String> INITIATOR_NAME = () -> Iscsi.system().initiatorName();

  private static final System.Logger LOG = System.getLogger(DhvMain.class.getName());
  private static final Pattern SEMVER = Pattern.compile("[0-9]+\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.-]+)?");

  private DhvMain() {}

  public static void main(String[] args) {
    PrintStream stdout = System.out;
    System.setOut(System.err); // nothing but the answer may reach Nomad's JSON parser
    if (System.getProperty("java.util.logging.SimpleFormatter.format") == null) {
      System.setProperty("java.util.logging.SimpleFormatter.format", "%1$tFT%1$tT.%1$tL %4$s %5$s%6$s%n");
    }
    int status = run(args, System.getenv(), stdout);
    stdout.flush();
    System.exit(status);
  }

  /** The version Nomad sees: the build's, when it is a version go-version parses. */
  public static String version() {
    String v = BuildInfo.version();
    return SEMVER.matcher(v).matches() ? v : "0.0.0";
  }

  /** The fingerprint answer of a plugin in {@code mode}. */
  public static String fingerprint(Mode mode) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("version", version());
    if (mode == Mode.DEFERRED) {
      out.put("deferred_bind", true);
    }
    return Json.write(out);
  }

  static int run(String[] args, Map<String, String> env, PrintStream out) {
    return run(args, env, out, INITIATOR_NAME);
  }

  /**
   * One operation; {@code storageNode} is this node's identity on network storage (tests on one
   * host give two plugin instances two identities).
   */
  static int run(String[] args, Map<String, String> env, PrintStream out, Supplier<String> storageNode) {
    Optional<Operation> op = Optional.empty();
    Optional<Path> passphraseFile = Optional.empty();
    String volumeId = "";
    try {
      Invocation inv = Invocation.parse(args);
      op = Optional.of(inv.operation());
      passphraseFile = inv.passphraseFile();
      if (inv.operation() == Operation.FINGERPRINT) {
        out.println(fingerprint(inv.mode()));
        return 0;
      }
      if (inv.mode() == Mode.IMMEDIATE && (inv.operation() == Operation.PUBLISH
          || inv.operation() == Operation.UNPUBLISH || inv.operation() == Operation.RELEASE)) {
        throw DhvException.invalid(inv.operation().id() + " exists only in deferred mode; this plugin binds"
            + " volumes at create");
      }
      DhvRequest req = DhvRequest.from(inv.operation(), env);
      volumeId = req.volumeId();
      LOG.log(System.Logger.Level.INFO, inv.operation().id() + " volume " + req.volumeId() + " ('"
          + dev.caravan.csi.backend.IdRules.printable(req.volumeName()) + "') on node " + req.nodeId());
      DhvStore store = new DhvStore(inv.dataDir());
      Map<String, Object> result;
      try (AutoCloseable lock = store.lock(req.volumeId());
          DhvVolumes volumes = DhvVolumes.open(inv.driver(), inv.mode(), inv.dataDir(), inv.options(), req, store,
              storageNode, inv.passphraseFile(), inv.keyCosts())) {
        result = switch (inv.operation()) {
          case CREATE -> volumes.create();
          case DELETE -> volumes.delete();
          case PUBLISH -> volumes.publish();
          case UNPUBLISH -> volumes.unpublish();
          case RELEASE -> volumes.release(env.getOrDefault("DHV_RELEASE_INITIATOR", ""));
          case FINGERPRINT -> throw new IllegalStateException("answered above");
        };
      }
      out.println(Json.write(result));
      return 0;
    } catch (DhvException e) {
      return fail(out, op, e.getMessage(), e.exitStatus());
    } catch (CsiException e) {
      if (e.kind() == CsiException.Kind.UNAUTHENTICATED && passphraseFile.isPresent()) {
        // The backend names the CSI secret it was given; a DHV operator never wrote one: the file is
        // where the passphrase came from.
        Path file = passphraseFile.get();
        String message = PassphraseFile.rotating(file)
            ? "neither passphrase file " + file + " nor " + PassphraseFile.previous(file) + " opens volume " + volumeId
                + ": both hold other passphrases than the volume's"
            : "passphrase file " + file + " does not open volume " + volumeId
                + ": it holds another passphrase than the one the volume was encrypted with";
        return fail(out, op, message, DhvException.FAILED);
      }
      int status = switch (e.kind()) {
        case INVALID_ARGUMENT, OUT_OF_RANGE, ALREADY_EXISTS -> DhvException.INVALID;
        default -> DhvException.FAILED;
      };
      return fail(out, op, e.getMessage(), status);
    } catch (Exception e) {
      LOG.log(System.Logger.Level.ERROR, "unexpected failure", e);
      return fail(out, op, Failures.describe(e), DhvException.FAILED);
    }
  }

  private static int fail(PrintStream out, Optional<Operation> op, String message, int status) {
    String text = op.map(o -> o.id() + " failed: ").orElse("") + message;
    LOG.log(System.Logger.Level.ERROR, text);
    out.println(Json.write(Map.of("error", text)));
    return status;
  }

  /** The wrapper's arguments and Nomad's operation. */
  record Invocation(String driver, Mode mode, Path dataDir, Map<String, String> options,
      Optional<Path> passphraseFile, KeyCosts keyCosts, Operation operation) {
    static Invocation parse(String[] args) {
      String driver = null;
      Mode mode = null;
      Path dataDir = null;
      Path passphraseFile = null;
      KeyCosts keyCosts = KeyCosts.DEFAULT;
      Map<String, String> options = new TreeMap<>();
      List<String> rest = new java.util.ArrayList<>();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (a.startsWith("--") && i + 1 >= args.length) {
          throw DhvException.invalid(a + " needs a value");
        }
        switch (a) {
          case "--driver" -> driver = args[++i];
          case "--mode" -> mode = Mode.parse(args[++i]);
          case "--data-dir" -> dataDir = Path.of(args[++i]);
          case "--passphrase-file" -> passphraseFile = Path.of(args[++i]);
          case "--luks-iter-time" -> {
            long ms = number(a, args[++i]);
            KeyCosts before = keyCosts;
            keyCosts = inRange(() -> before.withLuksIterTime(ms));
          }
          case "--luks-pbkdf-memory" -> {
            long kib = number(a, args[++i]);
            KeyCosts before = keyCosts;
            keyCosts = inRange(() -> before.withLuksPbkdfMemory(kib));
          }
          case "--zfs-pbkdf2-iters" -> {
            long n = number(a, args[++i]);
            keyCosts = keyCosts.withZfs(inRange(() -> KeyCosts.zfsPbkdf2Iters(n)));
          }
          case "--option" -> {
            String kv = args[++i];
            int eq = kv.indexOf('=');
            if (eq <= 0) {
              throw DhvException.invalid("--option takes key=value, not '" + kv + "'");
            }
            options.put(kv.substring(0, eq), kv.substring(eq + 1));
          }
          default -> rest.add(a);
        }
      }
      if (rest.size() != 1) {
        throw DhvException.invalid("expected exactly one operation (" + Operation.known() + "), got " + rest);
      }
      Operation op = Operation.parse(rest.getFirst()).orElseThrow(() -> DhvException.invalid(
          "unknown operation '" + dev.caravan.csi.backend.IdRules.printable(rest.getFirst()) + "'; known: "
              + Operation.known()));
      if (driver == null || !DRIVERS.contains(driver)) {
        throw DhvException.invalid("--driver must be one of " + DRIVERS
            + " (the backends tested as DHV plugins so far)");
      }
      if (mode == null || dataDir == null || !dataDir.isAbsolute()) {
        throw DhvException.invalid("--mode and an absolute --data-dir are required");
      }
      return new Invocation(driver, mode, dataDir, options, Optional.ofNullable(passphraseFile), keyCosts, op);
    }

    private static <T> T inRange(Supplier<T> cost) {
      try {
        return cost.get();
      } catch (IllegalArgumentException e) {
        throw DhvException.invalid(e.getMessage());
      }
    }

    private static long number(String flag, String value) {
      try {
        return Long.parseLong(value);
      } catch (NumberFormatException e) {
        throw DhvException.invalid(flag + ": '" + dev.caravan.csi.backend.IdRules.printable(value)
            + "' is not a whole number");
      }
    }
  }
}

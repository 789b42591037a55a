package dev.caravan.benchmarks.harness;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** {@code --name value} arguments with defaults, and where {@code bin/caravan} is. */
final class Options {
  private final Map<String, String> values = new HashMap<>();

  Options(String[] args, Map<String, String> defaults) {
    values.putAll(defaults);
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--")) {
        throw new IllegalArgumentException("unexpected argument '" + a + "'; options: " + defaults.keySet());
      }
      String key;
      String value;
      int eq = a.indexOf('=');
      if (eq > 0) {
        key = a.substring(2, eq);
        value = a.substring(eq + 1);
      } else {
        key = a.substring(2);
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("--" + key + " needs a value");
        }
        value = args[++i];
      }
      if (!defaults.containsKey(key)) {
        throw new IllegalArgumentException("unknown option --" + key + "; options: " + defaults.keySet());
      }
      values.put(key, value);
    }
  }

  String get(String key) {
    return values.get(key);
  }

  int integer(String key) {
    return Integer.parseInt(values.get(key));
  }

  /**
   * {@code --launcher}, else {@code bin/caravan} of the checkout this jar was built in
   * (benchmarks/target*&#47;benchmarks.jar), else of the working directory.
   */
  Path launcher() {
    String given = values.get("launcher");
    if (given != null && !given.isEmpty()) {
      return Path.of(given);
    }
    try {
      Path jar = Path.of(Options.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      for (Path p = jar.getParent(); p != null; p = p.getParent()) {
        if (Files.isExecutable(p.resolve("bin/caravan"))) {
          return p.resolve("bin/caravan");
        }
      }
    } catch (URISyntaxException | RuntimeException e) {
      // fall through to the working directory
    }
    return Path.of("bin/caravan").toAbsolutePath();
  }

  /** {@code --serve-args a,b,c}: extra arguments for {@code caravan serve}, comma-separated. */
  java.util.List<String> serveArgs() {
    String v = values.get("serve-args");
    return v == null || v.isBlank() ? java.util.List.of() : java.util.List.of(v.split(",", -1));
  }

  /** Environment for the server: CARAVAN_JAR when {@code --jar} is given. */
  Map<String, String> serverEnv() {
    Map<String, String> env = new HashMap<>();
    String jar = values.get("jar");
    if (jar != null && !jar.isEmpty()) {
      env.put("CARAVAN_JAR", Path.of(jar).toAbsolutePath().toString());
    }
    return env;
  }
}

package dev.caravan.csi.scenario;

import dev.caravan.csi.support.CrashPoints;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The crash points the main sources of this module reach: every {@code CrashPoints.reach("...")}
 * literal, found by reading the sources themselves, so that the kill tests can require a case for each.
 */
final class CrashPointSources {
  private static final Pattern CALL = Pattern.compile("CrashPoints\\s*\\.\\s*reach\\s*\\(");
  private static final Pattern LITERAL = Pattern.compile("CrashPoints\\s*\\.\\s*reach\\s*\\(\\s*\"([^\"]+)\"\\s*\\)");

  private CrashPointSources() {}

  /** Each step, with the source files (relative to the source root) that reach it. */
  static Map<String, Set<String>> scan() throws IOException {
    Path root = sourceRoot();
    Map<String, Set<String>> steps = new TreeMap<>();
    List<String> notLiteral = new ArrayList<>();
    try (Stream<Path> files = Files.walk(root)) {
      for (Path file : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        String text = Files.readString(file);
        String relative = root.relativize(file).toString();
        int calls = count(CALL.matcher(text));
        Matcher m = LITERAL.matcher(text);
        int literals = 0;
        while (m.find()) {
          literals++;
          steps.computeIfAbsent(m.group(1), k -> new TreeSet<>()).add(relative);
        }
        if (calls != literals) {
          notLiteral.add(relative);
        }
      }
    }
    if (!notLiteral.isEmpty()) {
      throw new AssertionError("CrashPoints.reach must be called with a string literal (the kill tests find"
          + " the steps by reading the sources); not so in " + notLiteral);
    }
    if (steps.isEmpty()) {
      throw new AssertionError("no CrashPoints.reach call found under " + root);
    }
    return steps;
  }

  private static int count(Matcher m) {
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }

  /** {@code src/main/java} of the module whose compiled classes hold {@link CrashPoints}. */
  private static Path sourceRoot() {
    Path classes;
    try {
      classes = Path.of(CrashPoints.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new AssertionError(e);
    }
    Path root = classes.resolve("../../src/main/java").normalize();
    if (!Files.isDirectory(root)) {
      throw new AssertionError("the main sources are not next to the classes " + classes + " (no " + root + ")");
    }
    return root;
  }
}

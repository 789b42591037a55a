package dev.caravan.csi.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The docs against the test tree. A guarantee in the docs is only as good as the test it names, so
 * every test class a page names must exist (in the package it names, when it names one), and every
 * rule of operating.md's safety table must name at least one. A fully qualified class name anywhere on
 * a page, a command line in a code block included, or in a script, must be a class of some module's
 * sources.
 */
class DocsNameTestsTest {
  /** A class name in backticks, optionally package-qualified, optionally with {@code #method}. */
  private static final Pattern NAMED =
      Pattern.compile("`((?:[a-z]\\w*\\.)*)([A-Z]\\w*(?:Test|Conformance))(?:#\\w+)?`");
  /** A fully qualified name of one of our classes, e.g. in {@code scripts/guest-suite --select-class ...}. */
  private static final Pattern QUALIFIED = Pattern.compile("\\bdev\\.caravan(?:\\.[a-z]\\w*)+\\.[A-Z]\\w*");
  private static final String SAFETY = "## Safety rules, and the tests that prove them";

  private static final Path ROOT = Files.exists(Path.of("docs")) ? Path.of(".") : Path.of("..");

  @Test
  void everyTestClassTheDocsNameExists() throws IOException {
    Set<String> tests = sources("src/test/java");
    List<String> missing = new ArrayList<>();
    int named = 0;
    for (Path page : pages()) {
      Matcher m = NAMED.matcher(Files.readString(page));
      while (m.find()) {
        named++;
        String name = m.group(1) + m.group(2);
        if (tests.stream().noneMatch(t -> t.equals(name) || t.endsWith("." + name))) {
          missing.add(ROOT.relativize(page) + ": " + name);
        }
      }
    }
    assertThat(named).as("test classes the docs name").isGreaterThan(20);
    assertThat(missing).as("named in the docs, but no such class under any src/test").isEmpty();
  }

  @Test
  void everyFullyQualifiedClassTheDocsNameExistsThere() throws IOException {
    Set<String> classes = sources("src/main/java");
    classes.addAll(sources("src/test/java"));
    List<String> missing = new ArrayList<>();
    List<Path> pages = new ArrayList<>(pages());
    pages.addAll(scripts());
    for (Path page : pages) {
      Matcher m = QUALIFIED.matcher(Files.readString(page));
      while (m.find()) {
        if (!classes.contains(m.group())) {
          missing.add(ROOT.relativize(page) + ": " + m.group());
        }
      }
    }
    assertThat(missing).as("named in the docs or scripts by a fully qualified name that no source file has")
        .isEmpty();
  }

  @Test
  void everySafetyRuleNamesTheTestThatProvesIt() throws IOException {
    String page = Files.readString(ROOT.resolve("docs/operating.md"));
    int at = page.indexOf(SAFETY);
    assertThat(at).as("operating.md has the section " + SAFETY).isNotNegative();
    List<String> rows = page.substring(at).lines()
        .filter(l -> l.startsWith("| ") && !l.startsWith("| rule |"))
        .toList();
    assertThat(rows).as("rules in the safety table").hasSizeGreaterThan(5);
    for (String row : rows) {
      String tests = row.substring(row.lastIndexOf('|', row.length() - 2) + 1); // the last cell
      assertThat(NAMED.matcher(tests).find()).as("a test named for: %s", row).isTrue();
    }
  }

  private static List<Path> pages() throws IOException {
    List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("benchmarks/README.md"),
        ROOT.resolve("examples/README.md")));
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    return pages;
  }

  /** The scripts that name test classes to run (scripts/guest-suite's selection among them), and CI's. */
  private static List<Path> scripts() throws IOException {
    List<Path> scripts = new ArrayList<>(List.of(ROOT.resolve(".ci/run")));
    try (Stream<Path> files = Files.list(ROOT.resolve("scripts"))) {
      files.filter(Files::isRegularFile).sorted().forEach(scripts::add);
    }
    return scripts;
  }

  /** Fully qualified names of the top-level classes under every module's {@code tree} (e.g. src/test/java). */
  private static Set<String> sources(String tree) throws IOException {
    Set<String> names = new TreeSet<>();
    try (Stream<Path> modules = Files.list(ROOT)) {
      for (Path root : modules.map(m -> m.resolve(tree)).filter(Files::isDirectory).toList()) {
        try (Stream<Path> files = Files.walk(root)) {
          files.map(f -> root.relativize(f).toString()).filter(n -> n.endsWith(".java"))
              .forEach(n -> names.add(n.substring(0, n.length() - ".java".length()).replace('/', '.')));
        }
      }
    }
    return names;
  }
}

package dev.caravan.csi.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The two pages a newcomer opens first stay short enough to read, and no page or source reads as a
 * lab notebook: history (which session, which issue) lives in git, not in the text.
 */
class DocsReadAsDocsTest {
  private static final Path ROOT = Files.exists(Path.of("docs")) ? Path.of(".") : Path.of("..");
  private static final Pattern HISTORY = Pattern.compile("Session [0-9]|issue [0-9]");

  @Test
  void theFrontPagesStayShort() throws IOException {
    assertThat(Files.readAllLines(ROOT.resolve("README.md"))).as("README.md's lines").hasSizeLessThan(150);
    assertThat(Files.readAllLines(ROOT.resolve("benchmarks/README.md"))).as("benchmarks/README.md's lines")
        .hasSizeLessThan(300);
  }

  @Test
  void noPageOrSourceNamesASessionOrAnIssue() throws IOException {
    List<String> found = new ArrayList<>();
    for (Path file : textFiles()) {
      List<String> lines = Files.readAllLines(file);
      for (int i = 0; i < lines.size(); i++) {
        if (HISTORY.matcher(lines.get(i)).find()) {
          found.add(ROOT.relativize(file) + ":" + (i + 1) + ": " + lines.get(i).strip());
        }
      }
    }
    assertThat(found).as("lines that name a session or an issue").isEmpty();
  }

  /** The docs, and every module's hand-written sources and scripts (not build output, not jextract's). */
  private static List<Path> textFiles() throws IOException {
    List<Path> files = new ArrayList<>();
    for (String top : List.of("README.md", "docs", "scripts", ".ci", "benchmarks", "examples", "dist",
        "csi-server/src", "host-storage/src", "native")) {
      Path start = ROOT.resolve(top);
      if (!Files.exists(start)) {
        continue;
      }
      try (Stream<Path> walk = Files.walk(start)) {
        walk.filter(Files::isRegularFile)
            .filter(f -> !f.toString().contains("/target/") && !f.toString().contains("/node_modules/"))
            .filter(f -> f.toString().matches(".*\\.(md|java|sh|hcl|json|yml|yaml|xml|proto|txt)$")
                || !f.getFileName().toString().contains("."))
            .filter(f -> !f.getFileName().toString().equals(DocsReadAsDocsTest.class.getSimpleName() + ".java"))
            .forEach(files::add);
      }
    }
    return files;
  }
}

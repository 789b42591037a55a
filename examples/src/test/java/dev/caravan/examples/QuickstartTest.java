package dev.caravan.examples;

import static dev.caravan.examples.ChildJava.location;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.StorageException;
import java.io.ByteArrayInputStream;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Element;

/**
 * host-storage's README quickstart, taken from the page itself so that it cannot drift: its POM
 * asks for the artifact and version host-storage publishes, and its program compiles and runs, with
 * the command the page gives, against the jars the build made.
 */
class QuickstartTest {
  private static final Path STORAGE_LOCATION = location(StorageException.class);
  private static final Path README = STORAGE_LOCATION.getParent().getParent().resolve("README.md");

  @Test
  void thePomDependsOnTheArtifactHostStoragePublishes() throws Exception {
    Element published = PublishedPomTest.publishedPom(StorageException.class);
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    Element pom =
        factory
            .newDocumentBuilder()
            .parse(new ByteArrayInputStream(block("xml").getBytes(StandardCharsets.UTF_8)))
            .getDocumentElement();

    assertThat(PublishedPomTest.text(pom, "modelVersion")).isEqualTo("4.0.0");
    assertThat(PublishedPomTest.dependencies(pom))
        .containsExactly(
            PublishedPomTest.text(published, "groupId")
                + ":"
                + PublishedPomTest.text(published, "artifactId")
                + ":"
                + PublishedPomTest.text(published, "version")
                + ":compile");
  }

  @Test
  void theProgramRunsAsThePageSays(@TempDir Path project) throws Exception {
    Path source = project.resolve("src/main/java/Quickstart.java");
    Files.createDirectories(source.getParent());
    Files.writeString(source, block("java"));
    assertThat(Files.readAllLines(source)).as("the program's lines").hasSizeLessThanOrEqualTo(25);
    assertThat(block("sh"))
        .contains("java --enable-native-access=ALL-UNNAMED -cp \"$(cat cp.txt)\" src/main/java/Quickstart.java /");

    ChildJava.Result run =
        ChildJava.run(
            List.of(
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                STORAGE_LOCATION + File.pathSeparator + location(NativeLibraries.class),
                source.toString(),
                "/"));

    assertThat(run.exit()).as(run.output()).isZero();
    assertThat(run.output())
        .doesNotContain("WARNING")
        .containsPattern("(?m)^/: \\d+ MiB of [1-9]\\d* MiB used, \\d+ inodes free$")
        .containsPattern("(?m)^mounted at /: \\S+ from \\S+$");
  }

  /** The first fenced block of {@code language} under the page's Quickstart heading. */
  private static String block(String language) throws java.io.IOException {
    String page = Files.readString(README);
    String quickstart = page.substring(page.indexOf("## Quickstart"));
    Matcher m = Pattern.compile("(?s)```" + language + "\n(.*?)```").matcher(quickstart);
    assertThat(m.find()).as("a ```%s block under ## Quickstart in %s", language, README).isTrue();
    return m.group(1);
  }
}

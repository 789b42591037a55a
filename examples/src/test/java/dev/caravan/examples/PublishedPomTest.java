package dev.caravan.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.StorageException;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;
import org.xml.sax.SAXException;

/**
 * The POM an embedder resolves for host-storage and the bindings: the one the build installs and
 * deploys beside each jar (the flattened POM in the module's build directory, or the module's own
 * pom.xml when there is none). It names what the library needs at run time and nothing of the
 * CSI server's bill of materials.
 */
class PublishedPomTest {
  private static final List<String> SERVER_ONLY =
      List.of(
          "io.grpc", "io.prometheus", "com.fasterxml.jackson", "org.junit", "junit", "assertj", "archunit",
          "protobuf");

  @Test
  void hostStoragePublishesOnlyTheBindingsAsADependency() throws Exception {
    Element pom = publishedPom(StorageException.class);

    assertStandsAlone(pom);
    assertThat(text(pom, "artifactId")).isEqualTo("caravan-host-storage");
    assertThat(dependencies(pom)).containsExactly("dev.caravan:caravan-bindings:" + text(pom, "version") + ":compile");
  }

  @Test
  void theBindingsPublishNoDependency() throws Exception {
    Element pom = publishedPom(NativeLibraries.class);

    assertStandsAlone(pom);
    assertThat(text(pom, "artifactId")).isEqualTo("caravan-bindings");
    assertThat(dependencies(pom)).isEmpty();
  }

  private static void assertStandsAlone(Element pom) {
    assertThat(children(pom, "parent")).as("<parent>").isEmpty();
    assertThat(children(pom, "dependencyManagement")).as("<dependencyManagement>").isEmpty();
    NodeList scopes = pom.getElementsByTagName("scope");
    for (int i = 0; i < scopes.getLength(); i++) {
      assertThat(scopes.item(i).getTextContent().strip()).as("a scope").isNotEqualTo("import");
    }
    String everything = pom.getTextContent();
    assertThat(SERVER_ONLY).allSatisfy(name -> assertThat(everything).as("the POM's text").doesNotContain(name));
    assertThat(everything).as("unresolved properties").doesNotContain("${");
    assertThat(text(pom, "groupId")).isEqualTo("dev.caravan");
    assertThat(text(pom, "version")).isNotBlank();
    assertThat(text(pom, "name")).startsWith("Caravan ");
    assertThat(text(pom, "description")).isNotBlank();
  }

  /** groupId:artifactId:version:scope of each dependency, as written (no scope means compile). */
  static List<String> dependencies(Element pom) {
    List<String> found = new ArrayList<>();
    for (Element list : children(pom, "dependencies")) {
      for (Element d : children(list, "dependency")) {
        String scope = children(d, "scope").isEmpty() ? "compile" : text(d, "scope");
        found.add(text(d, "groupId") + ":" + text(d, "artifactId") + ":" + text(d, "version") + ":" + scope);
      }
    }
    return found;
  }

  /**
   * The POM Maven installs for the module that built {@code anchor}: the flattened one when the
   * module's build directory has it, else the module's pom.xml.
   */
  static Element publishedPom(Class<?> anchor)
      throws IOException, SAXException, ParserConfigurationException, URISyntaxException {
    // target/classes, or target/NAME.jar once the reactor has packaged the module: either way its
    // parent is the build directory.
    Path buildDir = Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI()).getParent();
    Path flattened = buildDir.resolve(".flattened-pom.xml");
    Path pom = Files.exists(flattened) ? flattened : buildDir.getParent().resolve("pom.xml");
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    return factory.newDocumentBuilder().parse(pom.toFile()).getDocumentElement();
  }

  private static List<Element> children(Element parent, String name) {
    List<Element> found = new ArrayList<>();
    NodeList nodes = parent.getChildNodes();
    for (int i = 0; i < nodes.getLength(); i++) {
      if (nodes.item(i).getNodeType() == Node.ELEMENT_NODE && nodes.item(i).getNodeName().equals(name)) {
        found.add((Element) nodes.item(i));
      }
    }
    return found;
  }

  static String text(Element parent, String name) {
    List<Element> found = children(parent, name);
    assertThat(found).as("<%s> in <%s>", name, parent.getNodeName()).hasSize(1);
    return found.getFirst().getTextContent().strip();
  }
}

package dev.caravan.bindings.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import dev.caravan.bindings.NativeLibraries;
import java.net.URISyntaxException;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The bindings are the bottom floor (docs/layers.md): they reach nothing of ours. */
class LayersArchTest {
  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() throws URISyntaxException {
    Path main = Path.of(NativeLibraries.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    classes = new ClassFileImporter().importPath(main);
  }

  @Test
  void packagesFormNoCycle() {
    slices()
        .matching("dev.caravan.(**)")
        .should()
        .beFreeOfCycles()
        .because("each generated package mirrors one C library and is regenerated alone")
        .check(classes);
  }

  @Test
  void reachNothingAbove() {
    noClasses()
        .should().dependOnClassesThat().resideInAnyPackage("dev.caravan.storage..", "dev.caravan.csi..")
        .because("the bindings are the bottom floor: host-storage builds on them, never the reverse")
        .check(classes);
  }
}

package dev.caravan.benchmarks.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import dev.caravan.benchmarks.LogLineBenchmark;
import java.net.URISyntaxException;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The benchmarks sit on top of every other module (docs/layers.md) and only use them. */
class LayersArchTest {
  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() throws URISyntaxException {
    Path main = Path.of(LogLineBenchmark.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    classes = new ClassFileImporter().importPath(main);
  }

  @Test
  void packagesFormNoCycle() {
    slices()
        .matching("dev.caravan.(**)")
        .should()
        .beFreeOfCycles()
        .because("a cycle makes every package in it a part of every other: none can be read,"
            + " tested or changed alone")
        .check(classes);
  }

  @Test
  void addNoClassToAnotherModulesPackage() {
    noClasses()
        .should().resideInAnyPackage("dev.caravan.csi..", "dev.caravan.storage..", "dev.caravan.bindings..")
        .because("a package split across two jars lets the benchmarks reach what the module keeps"
            + " package-private, so a benchmark would measure code the plugin does not run as shipped")
        .check(classes);
  }

  @Test
  void noForeignMemory() {
    noClasses()
        .should().dependOnClassesThat().resideInAPackage("java.lang.foreign..")
        .because("native memory is handled in bindings and host-storage's internal packages")
        .check(classes);
  }
}

package dev.caravan.benchmarks.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import dev.caravan.benchmarks.LogLineBenchmark;
import dev.caravan.storage.testing.Floors;
import org.junit.jupiter.api.Test;

/** The benchmarks sit on top of every other module (docs/layers.md) and only use them. */
class LayersArchTest {
  private static final JavaClasses classes = Floors.mainClassesOf(LogLineBenchmark.class);

  @Test
  void packagesFormNoCycle() {
    Floors.noPackageCycle().check(classes);
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

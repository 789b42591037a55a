package dev.caravan.storage.arch;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.testing.Floors;
import org.junit.jupiter.api.Test;

/**
 * The floors of bindings and host-storage (docs/layers.md): the bindings reach nothing of ours, and
 * host-storage is a library under the CSI server, never beside it.
 */
class LayersArchTest {
  private static final JavaClasses BINDINGS = Floors.mainClassesOf(NativeLibraries.class);
  private static final JavaClasses STORAGE = Floors.mainClassesOf(StorageException.class);

  @Test
  void bindingsFormNoCycle() {
    Floors.noPackageCycle().check(BINDINGS);
  }

  @Test
  void bindingsReachNothingAbove() {
    noClasses()
        .should().dependOnClassesThat().resideInAnyPackage("dev.caravan.storage..", "dev.caravan.csi..")
        .because("the bindings are the bottom floor: host-storage builds on them, never the reverse")
        .check(BINDINGS);
  }

  @Test
  void storageFormsNoCycle() {
    Floors.noPackageCycle().check(STORAGE);
  }

  @Test
  void storageNeverReachesTheCsiServer() {
    noClasses()
        .should().dependOnClassesThat().resideInAnyPackage("dev.caravan.csi..", "io.grpc..",
            "com.google.protobuf..")
        .because("host-storage is an embeddable library: a JVM that only wants mounts, loop"
            + " devices or zvols must not need the CSI server, gRPC or protobuf")
        .check(STORAGE);
  }

  @Test
  void foreignMemoryOnlyInInternalPackages() {
    noClasses()
        .that().resideOutsideOfPackage("dev.caravan.storage.internal..")
        .should().dependOnClassesThat().resideInAPackage("java.lang.foreign..")
        .because("native memory's lifetimes are handled in the internal packages; the public API"
            + " speaks Java types, so a caller cannot hold a segment past its arena")
        .check(STORAGE);
  }
}

package dev.caravan.storage.arch;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.internal.zfs.Lzc;
import dev.caravan.storage.internal.zfs.ZfsIoctls;
import dev.caravan.storage.zfs.ZfsException;
import java.net.URISyntaxException;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The floors of host-storage (docs/layers.md): a library under the CSI server, never beside it. */
class LayersArchTest {
  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() throws URISyntaxException {
    // This module's compiled main classes only: tests may reach across floors to set things up.
    Path main = Path.of(StorageException.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    classes = new ClassFileImporter().importPath(main);
  }

  @Test
  void packagesFormNoCycle() {
    slices()
        .matching("dev.caravan.(**)")
        .should()
        .beFreeOfCycles()
        // The one arrow up: internal.zfs raises the public ZfsException when a libzfs_core call
        // or a /dev/zfs ioctl fails (Lzc.Result#orThrow, ZfsIoctls#orThrow). Turning that around
        // means the zfs facade raises it from their results instead (docs/layers.md).
        .ignoreDependency(belongToAnyOf(Lzc.class, ZfsIoctls.class), belongToAnyOf(ZfsException.class))
        .because("a cycle makes every package in it a part of every other: none can be read,"
            + " tested or changed alone")
        .check(classes);
  }

  @Test
  void neverReachesTheCsiServer() {
    noClasses()
        .should().dependOnClassesThat().resideInAnyPackage("dev.caravan.csi..", "io.grpc..",
            "com.google.protobuf..")
        .because("host-storage is an embeddable library: a JVM that only wants mounts, loop"
            + " devices or zvols must not need the CSI server, gRPC or protobuf")
        .check(classes);
  }

  @Test
  void foreignMemoryOnlyInInternalPackages() {
    noClasses()
        .that().resideOutsideOfPackage("dev.caravan.storage.internal..")
        .should().dependOnClassesThat().resideInAPackage("java.lang.foreign..")
        .because("native memory's lifetimes are handled in the internal packages; the public API"
            + " speaks Java types, so a caller cannot hold a segment past its arena")
        .check(classes);
  }
}

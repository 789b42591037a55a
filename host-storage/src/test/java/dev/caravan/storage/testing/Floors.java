package dev.caravan.storage.testing;

import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.library.dependencies.SliceRule;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarFile;

/** What each module's LayersArchTest starts from (docs/layers.md): its classes and the no-cycle rule. */
public final class Floors {
  private Floors() {}

  /**
   * The compiled main classes of the module {@code anchor} belongs to, and nothing else: no test
   * classes (they may reach across floors to set things up) and no other module on the class path.
   * The module is its classes directory, or its jar once the reactor has packaged it.
   */
  public static JavaClasses mainClassesOf(Class<?> anchor) {
    try {
      Path from = Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (Files.isDirectory(from)) {
        return new ClassFileImporter().importPath(from);
      }
      try (JarFile jar = new JarFile(from.toFile())) {
        return new ClassFileImporter().importJar(jar);
      }
    } catch (URISyntaxException | IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** No two packages use each other, directly or around a loop. */
  public static SliceRule noPackageCycle() {
    return slices()
        .matching("dev.caravan.(**)")
        .should()
        .beFreeOfCycles()
        .because("a cycle makes every package in it a part of every other: none can be read,"
            + " tested or changed alone");
  }
}

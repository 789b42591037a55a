package dev.caravan.storage.testing;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The class path for a JVM a test forks to run one of its own classes.
 *
 * <p>Surefire runs these tests inside the {@code dev.caravan.storage} module: the module and the
 * bindings are on {@code jdk.module.path} and the test classes are patched into the module, so
 * {@code java.class.path} alone holds only JUnit and AssertJ. The forked JVM runs everything on the
 * class path, as the tests did before host-storage was a module (and as the guest's launcher does).
 */
public final class ForkedJvm {
  private ForkedJvm() {}

  /** This JVM's class path, module path and the directory or jar {@code anchor} was loaded from. */
  public static String classPath(Class<?> anchor) {
    List<String> entries = new ArrayList<>();
    try {
      entries.add(Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
    } catch (URISyntaxException e) {
      throw new IllegalStateException("the location of " + anchor, e);
    }
    for (String property : List.of("jdk.module.path", "java.class.path")) {
      String value = System.getProperty(property, "");
      if (!value.isEmpty()) {
        entries.add(value);
      }
    }
    return String.join(File.pathSeparator, entries);
  }
}

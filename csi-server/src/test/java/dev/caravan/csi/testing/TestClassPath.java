package dev.caravan.csi.testing;

import java.io.File;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The class path a forked plugin JVM of a test runs with. */
public final class TestClassPath {
  private TestClassPath() {}

  /**
   * The class path of this test run. The JUnit console launcher (as the guest runs it) loads the tests
   * through its own URLClassLoader, so {@code java.class.path} alone lacks them there.
   */
  public static String of() {
    List<String> entries = new ArrayList<>();
    if (Thread.currentThread().getContextClassLoader() instanceof URLClassLoader loader) {
      for (URL url : loader.getURLs()) {
        try {
          entries.add(Path.of(url.toURI()).toString());
        } catch (URISyntaxException e) {
          throw new AssertionError(e);
        }
      }
    }
    entries.add(System.getProperty("java.class.path"));
    return String.join(File.pathSeparator, entries);
  }
}

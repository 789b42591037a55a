package dev.caravan.csi.support;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** Facts about this build, filtered into a resource by Maven. */
public final class BuildInfo {
  private static final String VERSION = load();

  private BuildInfo() {}

  public static String version() {
    return VERSION;
  }

  private static String load() {
    try (InputStream in = BuildInfo.class.getResourceAsStream("/dev/caravan/csi/caravan-version.properties")) {
      if (in == null) {
        return "unknown";
      }
      Properties p = new Properties();
      p.load(in);
      String v = p.getProperty("version", "unknown");
      return v.startsWith("${") ? "unknown" : v;
    } catch (IOException e) {
      return "unknown";
    }
  }
}

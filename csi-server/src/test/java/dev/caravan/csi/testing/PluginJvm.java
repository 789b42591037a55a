package dev.caravan.csi.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The {@code java} command line a test forks a plugin with ({@code caravan serve} and friends, from
 * {@code dev.caravan.csi.cli.Main}).
 *
 * <p>Under the guest's emulated CPU a plugin JVM takes a minute or more to come up, most of it
 * loading and linking classes, and the kill and restart suites fork one per case. scripts/guest-suite
 * therefore trains a JVM AOT cache on the host (where it takes seconds) for a class path of jars only
 * (the cache cannot hold classes from directories), and names both here through
 * {@code CARAVAN_PLUGIN_CLASSPATH} and {@code CARAVAN_PLUGIN_AOT}. Without them, or when the cache no
 * longer matches, the plugin starts as before: the JVM falls back to loading classes itself.
 */
public final class PluginJvm {
  private PluginJvm() {}

  /** {@code java}, its options and the class path, up to (not including) the main class. */
  public static List<String> java() {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED",
        // C1 only and the serial collector: a test's plugin lives for a few calls, and starts far faster so.
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"));
    // The cache holds code generated without AVX, for the guest's CPU (scripts/plugin-aot says why):
    // a JVM that maps it must not expect AVX either.
    aotCache().ifPresent(cache -> command.addAll(List.of("-XX:UseAVX=0", "-XX:AOTCache=" + cache)));
    command.addAll(List.of("-cp", classPath()));
    return command;
  }

  /** {@link #java()} running {@code dev.caravan.csi.cli.Main} with {@code args}. */
  public static List<String> caravan(List<String> args) {
    return caravan(List.of(), args);
  }

  /** {@link #java()} with {@code jvmOptions} too, running {@code dev.caravan.csi.cli.Main} with {@code args}. */
  public static List<String> caravan(List<String> jvmOptions, List<String> args) {
    List<String> command = java();
    command.addAll(command.indexOf("-cp"), jvmOptions);
    command.add("dev.caravan.csi.cli.Main");
    command.addAll(args);
    return command;
  }

  private static String classPath() {
    String jars = System.getenv("CARAVAN_PLUGIN_CLASSPATH");
    return jars != null && !jars.isBlank() ? jars : TestClassPath.of();
  }

  private static Optional<Path> aotCache() {
    String jars = System.getenv("CARAVAN_PLUGIN_CLASSPATH");
    String cache = System.getenv("CARAVAN_PLUGIN_AOT");
    if (jars == null || jars.isBlank() || cache == null || cache.isBlank() || !Files.isRegularFile(Path.of(cache))) {
      return Optional.empty();
    }
    return Optional.of(Path.of(cache));
  }
}

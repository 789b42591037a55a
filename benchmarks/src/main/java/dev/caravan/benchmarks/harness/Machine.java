package dev.caravan.benchmarks.harness;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** What the results depend on: kernel, CPUs, JDK, load. */
final class Machine {
  private Machine() {}

  static String describe() {
    return "kernel " + read("/proc/sys/kernel/osrelease") + ", " + Runtime.getRuntime().availableProcessors()
        + " CPUs, client JDK " + System.getProperty("java.vm.version") + ", load average " + load();
  }

  static String load() {
    String l = read("/proc/loadavg");
    String[] parts = l.split(" ", -1);
    return parts.length >= 3 ? parts[0] + " " + parts[1] + " " + parts[2] : l;
  }

  // Held so that the level sticks (java.util.logging keeps loggers weakly).
  private static final java.util.logging.Logger NETTY_BOOTSTRAP =
      java.util.logging.Logger.getLogger("io.grpc.netty.shaded.io.netty.bootstrap");

  /**
   * Silences the client's "Unknown channel option 'SO_KEEPALIVE'" warning, which grpc-java's Netty
   * transport logs once per unix-socket channel and which would bury the results.
   */
  static void quietClientLogs() {
    NETTY_BOOTSTRAP.setLevel(java.util.logging.Level.SEVERE);
  }

  static void requireRoot() {
    for (String line : read("/proc/self/status").split("\n", -1)) {
      if (line.startsWith("Uid:") && !line.substring(4).trim().split("\\s+", -1)[1].equals("0")) {
        throw new IllegalStateException("run as root: the server attaches loop devices and mounts");
      }
    }
    if (!Files.exists(Path.of("/dev/loop-control"))) {
      throw new IllegalStateException("no /dev/loop-control: the file backend needs loop devices");
    }
  }

  private static String read(String file) {
    try {
      return Files.readString(Path.of(file), StandardCharsets.US_ASCII).trim();
    } catch (IOException e) {
      return "?";
    }
  }
}

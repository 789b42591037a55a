package dev.caravan.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What the benchmarks need from the machine. They mount and attach loop devices for real, so a
 * missing requirement fails the trial at once with a message naming it, instead of measuring an
 * error path.
 */
final class Requirements {
  private Requirements() {}

  /** Effective uid 0: mount(2) and the loop ioctls need CAP_SYS_ADMIN. */
  static void requireRoot() {
    if (effectiveUid() != 0) {
      throw new IllegalStateException(
          "this benchmark mounts and attaches loop devices: run it as root (effective uid is "
              + effectiveUid()
              + ")");
    }
  }

  static void requireLoopControl() {
    if (!Files.exists(Path.of("/dev/loop-control"))) {
      throw new IllegalStateException("this benchmark needs loop devices: no /dev/loop-control");
    }
  }

  /** The binary a shell-out benchmark compares against, found on PATH as ProcessBuilder would. */
  static void requireBinary(String name) {
    String path = System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    for (String dir : path.split(":", -1)) {
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, name))) {
        return;
      }
    }
    throw new IllegalStateException(
        "this benchmark compares against the " + name + " binary, which is not on PATH " + path);
  }

  // The "Uid:" line of /proc/self/status is real, effective, saved, filesystem uid.
  private static long effectiveUid() {
    try {
      for (String line :
          Files.readAllLines(Path.of("/proc/self/status"), StandardCharsets.US_ASCII)) {
        if (line.startsWith("Uid:")) {
          return Long.parseLong(line.substring("Uid:".length()).trim().split("\\s+", -1)[1]);
        }
      }
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("cannot read the effective uid from /proc/self/status", e);
    }
    throw new IllegalStateException("/proc/self/status has no Uid: line");
  }
}

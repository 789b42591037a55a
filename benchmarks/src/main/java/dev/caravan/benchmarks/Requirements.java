package dev.caravan.benchmarks;

import dev.caravan.storage.testing.HostRequirements;
import java.util.Optional;

/**
 * What the benchmarks need from the machine, as host-storage's {@link HostRequirements} (the tests'
 * one definition of each) answers it. They mount and attach loop devices for real, so a missing
 * requirement fails the trial at once with a message naming it, instead of measuring an error path.
 */
final class Requirements {
  private Requirements() {}

  /** Effective uid 0: mount(2) and the loop ioctls need CAP_SYS_ADMIN. */
  static void requireRoot() {
    require("this benchmark", HostRequirements.whyNotRoot());
  }

  static void requireLoopControl() {
    require("this benchmark", HostRequirements.whyNoLoopDevices());
  }

  /** The binary a shell-out benchmark compares against, found on PATH as ProcessBuilder would. */
  static void requireBinary(String name) {
    require("this benchmark", HostRequirements.whyNoTool(name));
  }

  /** Fails the trial of {@code benchmark} with {@code why}, when the machine lacks something. */
  static void require(String benchmark, Optional<String> why) {
    if (why.isPresent()) {
      throw new IllegalStateException(benchmark + " " + why.get());
    }
  }
}

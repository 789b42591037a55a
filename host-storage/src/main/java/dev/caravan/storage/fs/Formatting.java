package dev.caravan.storage.fs;

import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.exec.ToolRunner;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** {@link Filesystems#formatIfEmpty}, with the step between probe and mkfs open to tests. */
final class Formatting {
  private static final Duration TOOL_TIMEOUT = Duration.ofMinutes(10);

  private Formatting() {}

  /** {@code beforeMkfs} runs after the probe found the device empty, right before mkfs. */
  static FormatOutcome formatIfEmpty(
      Path device, FsType type, List<String> mkfsOptions, Runnable beforeMkfs) {
    Signature found = Probe.probe(device);
    if (found.kind() == Signature.Kind.FILESYSTEM && found.type().equals(Optional.of(type.id()))) {
      return FormatOutcome.ALREADY_FORMATTED;
    }
    if (!found.isEmpty()) {
      throw new DataPresentException(device, found.describe());
    }
    beforeMkfs.run();
    mkfs(device, type, mkfsOptions);
    return FormatOutcome.FORMATTED;
  }

  /** Runs the mkfs tool on {@code device}, without probing it first. */
  static void mkfs(Path device, FsType type, List<String> mkfsOptions) {
    List<String> command = new ArrayList<>();
    switch (type) {
      case EXT4 -> command.addAll(List.of("mkfs.ext4", "-E", "nodiscard"));
      case XFS -> command.addAll(List.of("mkfs.xfs", "-K"));
    }
    command.addAll(mkfsOptions);
    command.add(device.toString());
    ToolRunner.run(command, TOOL_TIMEOUT);
  }
}

package dev.caravan.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.fs.FormatOutcome;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.testing.HostRequirements;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Runs the example for real (root, loop devices, mkfs) and checks what it did and left behind. */
class EmbedHostStorageTest {
  @TempDir Path parent;

  private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);

  @BeforeEach
  void requireHost() {
    HostRequirements.assumeRootWithLoopDevices();
  }

  @Test
  void xfsRunsEveryStepAndLeavesNothing() throws IOException {
    HostRequirements.assumeXfs();

    EmbedHostStorage.Outcome outcome = new EmbedHostStorage(out, FsType.XFS).run(parent);

    assertThat(steps())
        .containsExactly(
            "workdir", "create", "attach", "probe", "format", "mount", "write", "stats", "grow",
            "stats", "unmount", "delete", "detach", "delete", "delete");
    assertThat(line("probe")).contains("no signature");
    assertThat(line("format")).contains("formatted xfs", "UUID ");
    assertThat(line("attach")).contains(outcome.device().toString(), "volume.img");
    assertThat(line("grow")).contains("512.0 MiB -> 1024.0 MiB");
    assertThat(outcome.format()).isEqualTo(FormatOutcome.FORMATTED);
    assertThat(outcome.afterWrite().usedBytes()).isGreaterThanOrEqualTo(EmbedHostStorage.WRITTEN_BYTES);
    assertThat(outcome.grown()).isTrue();
    // The filesystem grew with its device: by about the 512 MiB added, less xfs's own metadata.
    assertThat(outcome.afterGrow().totalBytes() - outcome.afterWrite().totalBytes())
        .isGreaterThan(448L << 20);
    assertThat(outcome.afterGrow().usedBytes())
        .isGreaterThanOrEqualTo(EmbedHostStorage.WRITTEN_BYTES);
    assertNothingLeft();
  }

  @Test
  void ext4GrowsOnlyWithCapSysResourceAndOtherwiseSaysWhy() throws IOException {
    HostRequirements.assumeLoopAndExt4();

    EmbedHostStorage.Outcome outcome = new EmbedHostStorage(out, FsType.EXT4).run(parent);

    assertThat(line("format")).contains("formatted ext4");
    assertThat(outcome.afterWrite().usedBytes()).isGreaterThanOrEqualTo(EmbedHostStorage.WRITTEN_BYTES);
    if (HostRequirements.hasCapSysResource()) {
      assertThat(outcome.grown()).isTrue();
      assertThat(outcome.afterGrow().totalBytes()).isGreaterThan(outcome.afterWrite().totalBytes());
    } else {
      assertThat(outcome.grown()).isFalse();
      assertThat(line("grow")).contains("skipped", "CAP_SYS_RESOURCE");
      assertThat(outcome.afterGrow().totalBytes()).isEqualTo(outcome.afterWrite().totalBytes());
    }
    assertThat(steps()).endsWith("unmount", "delete", "detach", "delete", "delete");
    assertNothingLeft();
  }

  @ParameterizedTest(name = "failing after {0}")
  @ValueSource(strings = {"workdir", "create", "attach", "format", "mount", "write", "grow"})
  void aFailureAtAnyStepStillUndoesEverything(String step) throws IOException {
    HostRequirements.assumeXfs();

    assertThatThrownBy(() -> new EmbedHostStorage(out, FsType.XFS, Optional.of(step)).run(parent))
        .isInstanceOf(StorageException.class)
        .hasMessageContaining("failing on purpose after step " + step)
        .hasNoSuppressedExceptions();

    assertThat(steps()).last().isEqualTo("delete"); // the work directory, always last
    if (List.of("mount", "write", "grow").contains(step)) {
      assertThat(steps()).contains("unmount", "detach");
    }
    assertNothingLeft();
  }

  private void assertNothingLeft() throws IOException {
    String under = parent.toRealPath().toString() + "/";
    assertThat(LoopDevices.list())
        .as("loop devices backed by a file under %s", under)
        .map(LoopDevice::backingFile)
        .map(Path::toString)
        .noneMatch(file -> file.startsWith(under));
    assertThat(MountTable.read())
        .as("mounts under %s", under)
        .map(MountEntry::mountPoint)
        .map(Path::toString)
        .noneMatch(mountPoint -> mountPoint.startsWith(under));
    try (Stream<Path> left = Files.list(parent)) {
      assertThat(left).as("files left in %s", parent).isEmpty();
    }
  }

  /** The step names, in the order they were printed. */
  private List<String> steps() {
    return lines().stream().map(line -> line.substring(0, line.indexOf(':'))).toList();
  }

  private String line(String step) {
    return lines().stream()
        .filter(line -> line.startsWith(step + ":"))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + step + " line in:\n" + printed()));
  }

  private List<String> lines() {
    return printed().lines().toList();
  }

  private String printed() {
    return printed.toString(StandardCharsets.UTF_8);
  }
}

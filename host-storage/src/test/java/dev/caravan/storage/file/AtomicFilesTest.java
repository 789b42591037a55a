package dev.caravan.storage.file;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.SyscallException;
import dev.caravan.storage.testing.Scratch;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class AtomicFilesTest {
  @RegisterExtension final Scratch scratch = new Scratch();

  @Test
  void writesAndReplacesWholeContent() throws Exception {
    Path file = scratch.dir().resolve("volume.json");

    AtomicFiles.write(file, "{\"size\": 1}".getBytes(StandardCharsets.UTF_8));
    assertThat(file).hasContent("{\"size\": 1}");

    AtomicFiles.write(file, "{}".getBytes(StandardCharsets.UTF_8));
    assertThat(file).hasContent("{}");

    AtomicFiles.write(file, new byte[0]);
    assertThat(file).isEmptyFile();
    try (Stream<Path> files = Files.list(scratch.dir())) {
      assertThat(files).containsExactly(file); // no temporary file left over
    }
  }

  @Test
  void leavesNothingBehindWhenItFails() throws Exception {
    Path directory = scratch.directory("taken");

    // rename(2) refuses to replace a directory with a file.
    assertThatThrownBy(() -> AtomicFiles.write(directory, new byte[] {1}))
        .isInstanceOfSatisfying(
            SyscallException.class,
            e -> {
              assertThat(e.operation()).isEqualTo("rename");
              assertThat(e.errnoName()).isEqualTo("EISDIR");
            });
    try (Stream<Path> files = Files.list(scratch.dir())) {
      assertThat(files).containsExactly(directory);
    }
  }

  @Test
  void replacesWholeContentWithoutSync() throws Exception {
    Path file = scratch.dir().resolve("vol.staged");

    AtomicFiles.replace(file, "a=1".getBytes(StandardCharsets.UTF_8));
    assertThat(file).hasContent("a=1");

    AtomicFiles.replace(file, "b".getBytes(StandardCharsets.UTF_8));
    assertThat(file).hasContent("b");
    try (Stream<Path> files = Files.list(scratch.dir())) {
      assertThat(files).containsExactly(file); // no temporary file left over
    }
  }

  @Test
  void replaceLeavesNothingBehindWhenItFails() throws Exception {
    Path directory = scratch.directory("taken");

    assertThatThrownBy(() -> AtomicFiles.replace(directory, new byte[] {1}))
        .isInstanceOfSatisfying(SyscallException.class, e -> assertThat(e.errnoName()).isEqualTo("EISDIR"));
    try (Stream<Path> files = Files.list(scratch.dir())) {
      assertThat(files).containsExactly(directory);
    }
  }
}

package dev.caravan.storage.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class MkfsCommandTest {
  private static final Path DEVICE = Path.of("/dev/loop9");

  @Test
  void ourOptionsThenTheCallersThenTheDevice() {
    assertThat(MkfsCommand.of(FsType.EXT4, List.of("-L", "data"), DEVICE))
        .containsExactly("mkfs.ext4", "-E", "nodiscard", "-L", "data", "/dev/loop9");
    assertThat(MkfsCommand.of(FsType.XFS, List.of("-m", "crc=1"), DEVICE))
        .containsExactly("mkfs.xfs", "-K", "-m", "crc=1", "/dev/loop9");
  }

  @Test
  void optionsThatSkipTheToolsOwnCheckAreRefused() {
    List<List<String>> ext4 =
        List.of(List.of("-F"), List.of("-qF"), List.of("-L", "x", "-F"), List.of("-Fq"));
    for (List<String> options : ext4) {
      assertThatThrownBy(() -> MkfsCommand.of(FsType.EXT4, options, DEVICE))
          .as("%s", options)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("would make mkfs.ext4 skip its own check for existing data");
    }
    List<List<String>> xfs = List.of(List.of("-f"), List.of("-C"), List.of("-qf"), List.of("-Kf"));
    for (List<String> options : xfs) {
      assertThatThrownBy(() -> MkfsCommand.of(FsType.XFS, options, DEVICE))
          .as("%s", options)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("would make mkfs.xfs skip its own check for existing data");
    }
  }

  @Test
  void aForceLetterInsideAnOptionsValueIsNoForce() {
    // -L takes a value: "-F" after it is a label; "-LF" is the label "F"; -E's value has an F.
    assertThat(MkfsCommand.of(FsType.EXT4, List.of("-L", "-F"), DEVICE)).contains("-F");
    assertThat(MkfsCommand.of(FsType.EXT4, List.of("-qLF"), DEVICE)).contains("-qLF");
    assertThat(MkfsCommand.of(FsType.EXT4, List.of("-E", "root_owner=0:0,F"), DEVICE)).isNotEmpty();
    assertThat(MkfsCommand.of(FsType.XFS, List.of("-L", "-f", "-d", "agcount=4"), DEVICE))
        .contains("-f");
  }
}

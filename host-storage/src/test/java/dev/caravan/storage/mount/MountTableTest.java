package dev.caravan.storage.mount;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.StorageException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class MountTableTest {
  @Test
  void parsesEscapesOptionalFieldsAndSpacesInPaths() {
    String text =
        """
        22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,errors=remount-ro
        36 22 7:3 / /mnt/my\\040volume\\011tab rw,nosuid,nodev shared:5 master:2 propagate_from:1 - xfs /dev/loop3 rw,attr2
        37 22 0:5 /loop3 /var/lib/pod\\134x/dev ro,relatime - devtmpfs udev rw,size=4k
        38 22 0:44 / /tmp/new\\012line rw - tmpfs my\\040tmpfs rw
        """;

    List<MountEntry> entries = MountTable.parse(text);

    assertThat(entries).hasSize(4);
    assertThat(entries.get(0))
        .isEqualTo(
            new MountEntry(
                22,
                1,
                "253:0",
                "/",
                Path.of("/"),
                "rw,relatime",
                List.of("shared:1"),
                "ext4",
                "/dev/vda",
                "rw,errors=remount-ro"));
    MountEntry volume = entries.get(1);
    assertThat(volume.mountPoint()).isEqualTo(Path.of("/mnt/my volume\ttab"));
    assertThat(volume.optionalFields()).containsExactly("shared:5", "master:2", "propagate_from:1");
    assertThat(volume.fsType()).isEqualTo("xfs");
    assertThat(volume.source()).isEqualTo("/dev/loop3");
    assertThat(volume.superOptions()).isEqualTo("rw,attr2");
    assertThat(volume.readOnly()).isFalse();
    MountEntry bind = entries.get(2);
    assertThat(bind.root()).isEqualTo("/loop3");
    assertThat(bind.mountPoint()).isEqualTo(Path.of("/var/lib/pod\\x/dev"));
    assertThat(bind.optionalFields()).isEmpty();
    assertThat(bind.readOnly()).isTrue();
    assertThat(entries.get(3).mountPoint()).isEqualTo(Path.of("/tmp/new\nline"));
    assertThat(entries.get(3).source()).isEqualTo("my tmpfs");
  }

  @Test
  void decodesEscapedBytesOfMultibyteCharacters() {
    // The kernel only escapes space, tab, newline and backslash, but it escapes bytes, not chars.
    List<MountEntry> entries =
        MountTable.parse("40 22 0:45 / /srv/caf\\303\\251\\040bar rw - tmpfs none rw\n");

    assertThat(entries.get(0).mountPoint()).isEqualTo(Path.of("/srv/café bar"));
  }

  @Test
  void aSuperblockMountedReadOnlyIsReadOnly() {
    MountEntry entry = MountTable.parse("41 22 7:1 / /a rw - ext4 /dev/loop1 ro\n").get(0);

    assertThat(entry.readOnly()).isTrue();
  }

  @Test
  void rejectsMalformedLines() {
    assertThatThrownBy(() -> MountTable.parse("22 1 253:0 / / rw shared:1 ext4 /dev/vda rw\n"))
        .isInstanceOf(StorageException.class)
        .hasMessageContaining("malformed mountinfo line 1");
    assertThatThrownBy(() -> MountTable.parse("x 1 253:0 / / rw - ext4 /dev/vda rw\n"))
        .isInstanceOf(StorageException.class);
  }

  @Test
  void readsThisProcessTable() {
    assertThat(MountTable.read()).anyMatch(entry -> entry.mountPoint().equals(Path.of("/")));
    assertThat(MountTable.isMountPoint(Path.of("/proc"))).isTrue();
    assertThat(MountTable.at(Path.of("/proc")).orElseThrow().fsType()).isEqualTo("proc");
    assertThat(MountTable.isMountPoint(Path.of("/proc/self"))).isFalse();
    assertThat(MountTable.at(Path.of("/no/such/path"))).isEmpty();
  }

  @Test
  void mountFlagsByOption() {
    assertThat(MountFlag.fromOption("ro")).contains(MountFlag.READ_ONLY);
    assertThat(MountFlag.fromOption("nosuid")).contains(MountFlag.NO_SUID);
    assertThat(MountFlag.fromOption("rw")).isEmpty();
    for (MountFlag flag : MountFlag.values()) {
      assertThat(MountFlag.fromOption(flag.option())).contains(flag);
    }
  }
}

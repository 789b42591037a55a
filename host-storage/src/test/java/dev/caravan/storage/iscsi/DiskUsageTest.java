package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** DiskUsage over a sysfs tree laid out the way the kernel lays out /sys/block, and mountinfo text. */
class DiskUsageTest {
  private static final String WWID = "36001405aabbccddeeff00112233445566";
  private static final String ROOT = "22 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw\n";

  @TempDir Path sys;

  private Path device(String name, String dev) throws IOException {
    Path dir = Files.createDirectories(sys.resolve(name));
    Files.writeString(dir.resolve("dev"), dev + "\n");
    Files.createDirectories(dir.resolve("holders"));
    return dir;
  }

  private void map(String dm, String dev, String uuid, String... slaves) throws IOException {
    Path dir = device(dm, dev);
    Files.createDirectories(dir.resolve("dm"));
    Files.writeString(dir.resolve("dm/uuid"), uuid + "\n");
    for (String slave : slaves) {
      Files.createFile(sys.resolve(slave).resolve("holders").resolve(dm));
    }
  }

  private DiskUsage.Usage usage(String mountinfo, String... disks) {
    List<MountEntry> mounts = MountTable.parse(ROOT + mountinfo);
    return new DiskUsage(sys, mounts).of(List.of(disks));
  }

  @Test
  void aDiskNothingUsesHasNoUsers() throws IOException {
    device("sdb", "8:16");
    assertThat(usage("", "sdb")).isEqualTo(new DiskUsage.Usage(List.of(), List.of()));
  }

  @Test
  void aMountOfTheDiskIsAUser() throws IOException {
    device("sdb", "8:16");
    assertThat(usage("40 22 8:16 / /mnt/vol rw - ext4 /dev/sdb rw\n", "sdb").users())
        .containsExactly("sdb mounted at /mnt/vol");
  }

  @Test
  void aMountOfAPartitionIsAUser() throws IOException {
    Path disk = device("sdb", "8:16");
    Path part = Files.createDirectories(disk.resolve("sdb1"));
    Files.writeString(part.resolve("partition"), "1\n");
    Files.writeString(part.resolve("dev"), "8:17\n");
    assertThat(usage("40 22 8:17 / /data rw - xfs /dev/sdb1 rw\n", "sdb").users())
        .containsExactly("sdb1 mounted at /data");
  }

  @Test
  void aBindMountOfTheDeviceNodeIsAUser() throws IOException {
    device("sdb", "8:16");
    map("dm-3", "253:3", "mpath-" + WWID, "sdb");
    String mountinfo = """
        41 22 0:5 /dm-3 /csi/publish/vol rw - devtmpfs udev rw
        42 22 0:5 / /dev rw - devtmpfs udev rw
        """;
    assertThat(usage(mountinfo, "sdb").users())
        .containsExactly("sdb in multipath map " + WWID + ": dm-3 bound at /csi/publish/vol");
  }

  @Test
  void anUnusedMultipathMapIsToBeFlushedNotAUser() throws IOException {
    device("sdb", "8:16");
    device("sdc", "8:32");
    map("dm-3", "253:3", "mpath-" + WWID, "sdb", "sdc");
    DiskUsage.Usage u = usage("", "sdb", "sdc");
    assertThat(u.users()).isEmpty();
    assertThat(u.idleMaps()).containsExactly(Wwid.of(WWID));
  }

  @Test
  void aMountedOrHeldMultipathMapIsAUser() throws IOException {
    device("sdb", "8:16");
    map("dm-3", "253:3", "mpath-" + WWID, "sdb");
    DiskUsage.Usage mounted = usage("40 22 253:3 / /mnt/vol rw - ext4 /dev/mapper/" + WWID + " rw\n", "sdb");
    assertThat(mounted.users()).containsExactly("sdb in multipath map " + WWID + ": dm-3 mounted at /mnt/vol");
    assertThat(mounted.idleMaps()).isEmpty();

    map("dm-4", "253:4", "part1-mpath-" + WWID, "dm-3");
    assertThat(usage("", "sdb").users()).containsExactly("sdb in multipath map " + WWID + ": dm-3 held by dm-4");
  }

  @Test
  void anyOtherHolderIsAUser() throws IOException {
    device("sdb", "8:16");
    map("dm-5", "253:5", "LVM-abcdef", "sdb");
    assertThat(usage("", "sdb").users()).containsExactly("sdb held by dm-5");
  }

  @Test
  void aDiskThatWentAwayHasNoUsers() {
    assertThat(usage("", "sdz")).isEqualTo(new DiskUsage.Usage(List.of(), List.of()));
  }
}

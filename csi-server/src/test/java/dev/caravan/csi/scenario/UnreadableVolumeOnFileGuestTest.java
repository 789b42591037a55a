package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GuestCommands;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.scenario.FailingRegions.Range;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * NodeStageVolume of a volume whose first MiB cannot be read: a file-backend volume that holds an
 * ext4 filesystem, whose image's first MiB lies on sectors of the data directory's disk that answer
 * I/O errors ({@link FailingRegions} under the data directory's filesystem). The stage refuses,
 * FAILED_PRECONDITION naming the device, the part and the error, and formats nothing: once the disk
 * reads again the volume stages with its file. Runs in the guest (device-mapper).
 */
class UnreadableVolumeOnFileGuestTest {
  private static final long SECTORS_PER_MIB = MIB >> 9;
  private static final Pattern EXTENT =
      Pattern.compile("^\\s*\\d+:\\s*(\\d+)\\.\\.\\s*(\\d+):\\s*(\\d+)\\.\\.\\s*(\\d+):.*$");

  private PluginFixture f;

  @AfterEach
  void tearDown() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  @Test
  void aVolumeWhoseFirstMibFailsToReadIsNeverFormattedAndStagesOnceItReads() throws Exception {
    HostRequirements.assumeDeviceMapper();
    f = PluginFixture.unstarted(new TestBackend.FileTestBackend());
    FailingRegions disk = f.dataOnAFilesystemThatCanFail();
    f.startPlugin();
    VolumeCapability cap = Caps.mount("ext4");
    String id = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("bad-start")
        .addVolumeCapabilities(cap).setCapacityRange(Caps.bytes(64 * MIB)).build()).getVolume().getVolumeId();
    Path staging = f.dir("staging/bad-start");
    f.stage(id, staging, cap);
    Files.writeString(staging.resolve("kept"), "the volume's data");
    f.unstage(id, staging);

    Path image = image();
    List<Range> firstMib = firstMib(image);
    assertThat(firstMib).as("the image's first MiB holds written blocks (the ext4 superblock)").isNotEmpty();
    GuestCommands.run("sync");
    Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3"); // the next read goes to the disk
    disk.fail(firstMib);

    StatusRuntimeException refused = error(() -> f.stage(id, staging, cap));
    assertThat(refused.getStatus().getCode()).as("NodeStageVolume of a volume whose start cannot be read: %s",
        refused).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(refused.getStatus().getDescription())
        .matches("refusing to format /dev/loop[0-9]+ for volume " + Pattern.quote(id) + " as ext4: its first MiB"
            + " cannot be read \\(.*EIO.*\\), so what it holds is unknown");
    assertThat(f.ourMounts()).as("nothing mounted").isEmpty();

    disk.fail(List.of());
    f.stage(id, staging, cap);
    assertThat(Files.readString(staging.resolve("kept"))).isEqualTo("the volume's data");
    f.unstage(id, staging);
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  private Path image() throws IOException {
    try (var files = Files.list(f.data.resolve("volumes"))) {
      List<Path> images = files.filter(p -> p.toString().endsWith(".img")).toList();
      assertThat(images).hasSize(1);
      return images.getFirst();
    }
  }

  /** The data disk's sectors that hold the image's first MiB, sorted, from {@code filefrag}. */
  private static List<Range> firstMib(Path image) {
    List<Range> out = new ArrayList<>();
    for (String line : GuestCommands.run("filefrag", "-v", "-b512", image.toString()).lines().toList()) {
      Matcher m = EXTENT.matcher(line);
      if (!m.matches()) {
        continue;
      }
      long logical = Long.parseLong(m.group(1));
      long physical = Long.parseLong(m.group(3));
      long length = Long.parseLong(m.group(2)) - logical + 1;
      if (logical < SECTORS_PER_MIB) {
        out.add(new Range(physical, Math.min(length, SECTORS_PER_MIB - logical)));
      }
    }
    out.sort(Comparator.comparingLong(Range::start));
    return out;
  }
}

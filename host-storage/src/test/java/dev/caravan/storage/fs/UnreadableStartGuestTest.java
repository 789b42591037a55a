package dev.caravan.storage.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.UnreadableDeviceException;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A device whose first (or last) MiB answers reads with I/O errors, over a disk that holds an ext4
 * filesystem: what it holds is unknown, so it is never formatted, the refusal names the part and
 * the error, and nothing on the disk changes. Runs in the guest (device-mapper).
 */
class UnreadableStartGuestTest {
  private static final long MIB = 1 << 20;
  private static final long SIZE = 32 * MIB;
  private static final long SECTORS_PER_MIB = MIB >> 9;

  @RegisterExtension final Scratch scratch = new Scratch();

  @BeforeEach
  void requireDeviceMapper() {
    HostRequirements.assumeRootWithLoopDevices();
    HostRequirements.assumeDeviceMapper();
  }

  @Test
  void aDeviceWhoseFirstMibFailsIsRefusedAndKeepsItsFilesystem() throws Exception {
    long rest = (SIZE >> 9) - SECTORS_PER_MIB;
    refusedAndUntouched(under -> "0 " + SECTORS_PER_MIB + " error\n" + SECTORS_PER_MIB + " " + rest + " linear "
        + under + " " + SECTORS_PER_MIB, "its first MiB");
  }

  @Test
  void aDeviceWhoseLastMibFailsIsRefusedAndKeepsItsFilesystem() throws Exception {
    long rest = (SIZE >> 9) - SECTORS_PER_MIB;
    refusedAndUntouched(under -> "0 " + rest + " linear " + under + " 0\n" + rest + " " + SECTORS_PER_MIB
        + " error", "its last MiB");
  }

  /**
   * @param table the device-mapper table over the disk (its path given), linear but for the part
   *     that fails ({@code dm-error})
   */
  private void refusedAndUntouched(Function<Path, String> table, String part) throws Exception {
    LoopDevice disk = LoopDevices.attach(scratch.image("disk.img", SIZE), false);
    try {
      assertThat(Filesystems.formatIfEmpty(disk.device(), FsType.EXT4, List.of())).isEqualTo(FormatOutcome.FORMATTED);
      String uuid = Probe.probe(disk.device()).uuid().orElseThrow();
      String before = digest(disk.device());
      String name = "cvunread" + Long.toString(ProcessHandle.current().pid(), 36);
      dmsetup("create", name, "--table", table.apply(disk.device()));
      try {
        Path device = Path.of("/dev/mapper", name).toRealPath();
        assertThatThrownBy(() -> Filesystems.formatIfEmpty(device, FsType.EXT4, List.of()))
            .as("formatting %s, whose %s fails to read", device, part)
            .isInstanceOfSatisfying(UnreadableDeviceException.class, e -> {
              assertThat(e.device()).isEqualTo(device);
              assertThat(e.getMessage()).startsWith("refusing to format " + device + ": " + part + " cannot be read")
                  .contains("EIO").endsWith("so what it holds is unknown");
            });
        assertThatThrownBy(() -> Probe.probe(device)).isInstanceOf(UnreadableDeviceException.class);
      } finally {
        dmsetup("remove", name);
      }
      assertThat(digest(disk.device())).as("the disk under the failing device, byte for byte").isEqualTo(before);
      assertThat(Probe.probe(disk.device()).uuid()).contains(uuid);
    } finally {
      LoopDevices.detach(disk);
    }
  }

  private static void dmsetup(String... arguments) {
    List<String> command = new ArrayList<>(List.of("dmsetup"));
    command.addAll(List.of(arguments));
    ToolRunner.run(command, Duration.ofSeconds(60));
  }

  private static String digest(Path device) throws IOException, NoSuchAlgorithmException {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    try (InputStream in = Files.newInputStream(device)) {
      byte[] buffer = new byte[1 << 16];
      for (int n; (n = in.read(buffer)) > 0; ) {
        sha.update(buffer, 0, n);
      }
    }
    return HexFormat.of().formatHex(sha.digest());
  }
}

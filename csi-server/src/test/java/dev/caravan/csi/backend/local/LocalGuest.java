package dev.caravan.csi.backend.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/** Shorthands for the local backend's guest tests: the pool, requests, and the zfs command as oracle. */
final class LocalGuest {
  static final String POOL = System.getenv().getOrDefault("CARAVAN_TEST_POOL", "caravan-test");
  static final String NODE = "guest-node";

  private LocalGuest() {}

  static VolumeCapability mount(String fs) {
    return VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fs))
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER)).build();
  }

  static VolumeCapability block() {
    return VolumeCapability.newBuilder().setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER)).build();
  }

  static CapacityRange bytes(long required) {
    return CapacityRange.newBuilder().setRequiredBytes(required).build();
  }

  static String zfsGet(String property, String dataset) {
    return run("zfs", "get", "-Hp", "-o", "value", property, dataset);
  }

  /** Runs a fixture command and returns its output; a failing {@code zfs list} yields "". */
  static String run(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
      if (p.exitValue() != 0) {
        if (command[0].equals("zfs") && command[1].equals("list")) {
          return "";
        }
        throw new AssertionError(String.join(" ", command) + " failed: " + err);
      }
      return out;
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}

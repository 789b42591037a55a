package dev.caravan.csi.backend.local;

import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;

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
    return dev.caravan.csi.testing.GuestCommands.run(command);
  }
}

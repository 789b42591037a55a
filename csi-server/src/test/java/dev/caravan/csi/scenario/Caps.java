package dev.caravan.csi.scenario;

import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;

/** Request-building shorthands for the tests. */
public final class Caps {
  public static final long MIB = 1L << 20;

  private Caps() {}

  public static VolumeCapability mount(String fsType, Mode mode, String... flags) {
    return VolumeCapability.newBuilder()
        .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType).addAllMountFlags(java.util.List.of(flags)))
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode))
        .build();
  }

  public static VolumeCapability mount(String fsType) {
    return mount(fsType, Mode.SINGLE_NODE_WRITER);
  }

  public static VolumeCapability block(Mode mode) {
    return VolumeCapability.newBuilder()
        .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode))
        .build();
  }

  public static VolumeCapability block() {
    return block(Mode.SINGLE_NODE_WRITER);
  }

  public static CapacityRange bytes(long required) {
    return CapacityRange.newBuilder().setRequiredBytes(required).build();
  }

  public static CapacityRange range(long required, long limit) {
    return CapacityRange.newBuilder().setRequiredBytes(required).setLimitBytes(limit).build();
  }
}

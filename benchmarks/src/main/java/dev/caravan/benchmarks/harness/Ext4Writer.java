package dev.caravan.benchmarks.harness;

import dev.caravan.csi.v1.VolumeCapability;

/**
 * The volume every node benchmark stages and publishes: an ext4 filesystem for a single writer node,
 * as Nomad asks for it, and the directory name Nomad gives that access mode under its CSI paths.
 */
public final class Ext4Writer {
  /** Mount access with ext4, SINGLE_NODE_WRITER. */
  public static final VolumeCapability CAPABILITY = VolumeCapability.newBuilder()
      .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
      .setAccessMode(VolumeCapability.AccessMode.newBuilder()
          .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
      .build();

  /** Nomad's name for this access mode in its staging and per-allocation paths. */
  public static final String USAGE = "rw-file-system-single-node-writer";

  private Ext4Writer() {}
}

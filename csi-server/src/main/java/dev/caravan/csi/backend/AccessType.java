package dev.caravan.csi.backend;

/** How a workload uses a volume: as a mounted filesystem or as a raw block device. */
public enum AccessType {
  MOUNT,
  BLOCK
}

package dev.caravan.csi.node;

/**
 * The access modes a node stages and publishes for: CSI's single-node modes, the only ones a
 * Caravan volume (a block device on one node) supports.
 */
public enum AccessMode {
  SINGLE_NODE_WRITER,
  SINGLE_NODE_READER_ONLY,
  SINGLE_NODE_SINGLE_WRITER,
  SINGLE_NODE_MULTI_WRITER;

  /**
   * Whether a volume published in this mode may have no other publish target on this node. Only
   * SINGLE_NODE_SINGLE_WRITER: the spec's table (§2.3) would also limit SINGLE_NODE_WRITER and
   * SINGLE_NODE_READER_ONLY to one target, but Nomad runs several allocations of one volume on a node
   * (one target each) and Kubernetes reads ReadWriteOnce the same way, so those modes, like
   * SINGLE_NODE_MULTI_WRITER, keep allowing several targets.
   */
  public boolean soleTarget() {
    return this == SINGLE_NODE_SINGLE_WRITER;
  }

  /** Whether the mode itself makes the volume read-only. */
  public boolean readOnly() {
    return this == SINGLE_NODE_READER_ONLY;
  }
}

package dev.caravan.csi.backend.qnap;

import java.util.Map;
import java.util.Optional;

/**
 * What the {@link QnapSimulator} tells a data path behind it whenever its iSCSI model changes: the
 * seam where a guest test drives a real LIO target through configfs (a fileio backstore per LUN, a
 * target per target, a node ACL with CHAP per admitted initiator), so that real initiators see what
 * the simulated appliance promises. Every method is called with the simulator's state lock held, in
 * the order the changes happen; the default does nothing (the host tests need no data path).
 */
interface TargetListener {
  default void lunCreated(int lunIndex, String name, long bytes, String naa) {}

  default void lunResized(int lunIndex, long bytes) {}

  default void lunDeleted(int lunIndex) {}

  /** A LUN copied from a snapshot of another LUN: the data path copies (or clones) the backing store. */
  default void lunCloned(int lunIndex, int sourceLunIndex, long snapshotId) {}

  default void snapshotTaken(int lunIndex, long snapshotId) {}

  default void snapshotDeleted(int lunIndex, long snapshotId) {}

  default void targetCreated(int targetIndex, String iqn) {}

  default void targetDeleted(int targetIndex) {}

  default void lunMapped(int targetIndex, int lunIndex, int lunNumber) {}

  default void lunUnmapped(int targetIndex, int lunIndex) {}

  /**
   * The target's Default Policy now admits ({@code true}) or denies every initiator its ACL does not
   * list. A new target starts admitting them (the factory default).
   */
  default void defaultPolicyChanged(int targetIndex, boolean admitsUnlisted) {}

  /** The target's ACL now lists exactly these initiators, each with its CHAP, if any. */
  default void aclChanged(int targetIndex, Map<String, Optional<QnapApi.Chap>> initiators) {}
}

package dev.caravan.csi.scenario;

import java.util.stream.Stream;

/**
 * The kill matrix's steps of encrypted file volumes (LUKS2 on the loop device), in the guest (dm-crypt):
 * a plugin killed between the LUKS2 format and the mapping's open, between the mapping's close and
 * the loop device's detach, or in a rotating stage between the new passphrase's key slot and the
 * destruction of the previous one's, leaves what the retried call finishes, with no mapping or loop
 * device left.
 */
class KillConformanceOnFileLuksGuestTest extends KillConformance {
  @Override
  TestBackend backend() {
    return TestBackend.fileEncrypted();
  }

  @Override
  Stream<Case> cases() {
    return MATRIX.stream().filter(c -> c.where() == Where.FILE_LUKS);
  }
}

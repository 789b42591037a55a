package dev.caravan.csi.scenario;

/**
 * The node suite on qnap: real LIO targets behind the simulator, open-iscsi and multipathd (the guest).
 * Growth on ext4 only: qnap's side of it (the LUN expanded, each path rescanned, multipathd resizing the
 * map) does not depend on the filesystem, and xfs_growfs is grown on the file and local backends.
 */
@GrowthFilesystems.On("ext4")
class NodeConformanceOnQnapTest extends NodeConformance {
  @Override
  TestBackend backend() {
    return TestBackend.qnapOnLio();
  }
}

package dev.caravan.csi.service;

import com.google.protobuf.Timestamp;
import dev.caravan.csi.backend.ContentSource;
import dev.caravan.csi.backend.SnapshotInfo;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCondition;
import dev.caravan.csi.v1.VolumeContentSource;
import java.util.List;

/** Domain records to protobuf messages. */
final class Convert {
  private Convert() {}

  static Volume volume(VolumeInfo v) {
    Volume.Builder b =
        Volume.newBuilder()
            .setVolumeId(v.id())
            .setCapacityBytes(v.capacityBytes())
            .putAllVolumeContext(v.context());
    v.source().ifPresent(s -> b.setContentSource(source(s)));
    for (Topology t : v.topology()) {
      b.addAccessibleTopology(topology(t));
    }
    return b.build();
  }

  static VolumeContentSource source(ContentSource s) {
    VolumeContentSource.Builder b = VolumeContentSource.newBuilder();
    switch (s.kind()) {
      case SNAPSHOT -> b.setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(s.id()));
      case VOLUME -> b.setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(s.id()));
    }
    return b.build();
  }

  static dev.caravan.csi.v1.Topology topology(Topology t) {
    return dev.caravan.csi.v1.Topology.newBuilder().putAllSegments(t.segments()).build();
  }

  static List<Topology> topologies(List<dev.caravan.csi.v1.Topology> list) {
    return list.stream().map(t -> new Topology(t.getSegmentsMap())).toList();
  }

  static Snapshot snapshot(SnapshotInfo s) {
    return Snapshot.newBuilder()
        .setSnapshotId(s.id())
        .setSourceVolumeId(s.sourceVolumeId())
        .setSizeBytes(s.sizeBytes())
        .setReadyToUse(s.readyToUse())
        .setCreationTime(timestamp(s.createdAt().toEpochMilli()))
        .build();
  }

  static Timestamp timestamp(long epochMillis) {
    return Timestamp.newBuilder()
        .setSeconds(Math.floorDiv(epochMillis, 1000L))
        .setNanos((int) Math.floorMod(epochMillis, 1000L) * 1_000_000)
        .build();
  }

  static VolumeCondition condition(VolumeHealth h) {
    return VolumeCondition.newBuilder().setAbnormal(h.abnormal()).setMessage(h.message()).build();
  }
}

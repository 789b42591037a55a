package dev.caravan.csi.observe.stats;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.observe.nomad.NomadPaths.NomadVolume;
import dev.caravan.storage.fs.FsStats;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * One volume's usage as last measured: statvfs figures, the tree walk's counts, and how fresh and
 * complete they are.
 *
 * @param mountedAt the staging path the figures come from (empty when nothing is mounted here)
 * @param deviceBytes size of the block device (block access volumes have no filesystem figures)
 * @param walk the last finished tree walk
 */
public record VolumeUsage(
    String volumeId,
    Optional<NomadVolume> nomad,
    AccessType accessType,
    Optional<Path> mountedAt,
    Optional<FsStats> fs,
    Optional<Instant> statfsAt,
    long deviceBytes,
    Optional<Walk> walk,
    boolean walkRunning,
    boolean stale,
    Optional<String> lastError,
    Optional<Instant> lastErrorAt) {

  /** A finished walk of the staging mount's tree. */
  public record Walk(
      long files, long directories, long others, long fileBytes, Instant at, Duration duration, boolean complete,
      String note) {}

  /** Whether there is anything to show yet (503 otherwise). */
  public boolean measured() {
    return accessType == AccessType.BLOCK ? statfsAt.isPresent() : fs.isPresent();
  }

  /** The JSON shape of {@code GET /v1/volume-stats/{id}}. */
  public Map<String, Object> toJson(String nodeId, Instant now) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("volume_id", volumeId);
    m.put("nomad_namespace", nomad.map(NomadVolume::namespace));
    m.put("nomad_volume_id", nomad.map(NomadVolume::volumeId));
    m.put("node_id", nodeId);
    m.put("access_type", accessType.name().toLowerCase(Locale.ROOT));
    m.put("mounted_at", mountedAt.map(Path::toString));
    m.put("measured", measured());
    m.put("device_bytes", deviceBytes);
    m.put("total_bytes", fs.map(FsStats::totalBytes).orElse(accessType == AccessType.BLOCK ? deviceBytes : null));
    m.put("used_bytes", fs.map(FsStats::usedBytes));
    m.put("available_bytes", fs.map(FsStats::availableBytes));
    m.put("total_inodes", fs.map(FsStats::totalInodes));
    m.put("used_inodes", fs.map(FsStats::usedInodes));
    m.put("free_inodes", fs.map(FsStats::freeInodes));
    m.put("statfs_at", statfsAt.map(Instant::toString));
    m.put("statfs_age_seconds", statfsAt.map(t -> seconds(Duration.between(t, now))));
    m.put("file_count", walk.map(Walk::files));
    m.put("directory_count", walk.map(Walk::directories));
    m.put("other_count", walk.map(Walk::others));
    m.put("file_bytes", walk.map(Walk::fileBytes));
    m.put("walk_at", walk.map(w -> w.at().toString()));
    m.put("walk_age_seconds", walk.map(w -> seconds(Duration.between(w.at(), now))));
    m.put("walk_duration_seconds", walk.map(w -> seconds(w.duration())));
    m.put("walk_complete", walk.map(Walk::complete));
    m.put("walk_note", walk.map(Walk::note).filter(s -> !s.isEmpty()));
    m.put("walk_running", walkRunning);
    m.put("stale", stale);
    m.put("last_error", lastError);
    m.put("last_error_at", lastErrorAt.map(Instant::toString));
    return m;
  }

  static double seconds(Duration d) {
    return d.toNanos() / 1e9;
  }
}

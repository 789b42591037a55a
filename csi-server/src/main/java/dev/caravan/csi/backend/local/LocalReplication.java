package dev.caravan.csi.backend.local;

import static dev.caravan.csi.backend.local.ZfsErrorsToCsi.guard;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.backend.ReplicationSettings;
import dev.caravan.csi.backend.local.LocalIds.VolumeId;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.storage.zfs.DatasetProperties;
import dev.caravan.storage.zfs.ResumeToken;
import dev.caravan.storage.zfs.StreamRefusedException;
import dev.caravan.storage.zfs.Zfs;
import dev.caravan.storage.zfs.ZfsStreams;
import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Replication on the {@code local} backend. The owner's replication snapshots are ZFS snapshots of
 * the zvol named {@code repl-<milliseconds>}: a CSI snapshot's short name is {@code snap-...}, so no
 * CSI name produces one, and the volume's ListSnapshots never shows them. A replica is the dataset
 * {@code <default pool>/<parent dataset>/rep-<hash of the volume id>} on the node that holds it,
 * received with {@code readonly=on}, {@code volmode=none} and {@value #PROP_REPLICA_OF} (the volume
 * id); it never carries the ownership marker, so nothing takes it for a volume, and only this class
 * destroys it, one leaf at a time.
 *
 * <p>A full stream onto a complete copy (the owner no longer holds a snapshot they share) is received
 * beside it, into the same name with {@value #REFRESH_SUFFIX}, or back into the first name when the
 * copy is there; the old copy is destroyed once the new one is whole. ZFS cannot receive a full
 * stream into a dataset that exists, and destroying the copy first would leave none if the owner were
 * lost during the send. Of the two, the copy is the one whose newest snapshot is newer.
 */
final class LocalReplication implements Replication {
  static final String SNAPSHOT_PREFIX = "repl-";
  static final String REPLICA_PREFIX = "rep-";
  static final String PROP_REPLICA_OF = "caravan:replica-of";
  /** The second place a copy can be in ({@link #places}). */
  static final String REFRESH_SUFFIX = "-b";
  /** How far into a stream the kill tests stop a sender or a receiver. */
  private static final long CRASH_POINT_BYTES = 1L << 20;

  private final Zfs zfs;
  private final LocalController controller;
  private final LocalConfig config;
  private final Clock clock;

  LocalReplication(Zfs zfs, LocalController controller, LocalConfig config, Clock clock) {
    this.zfs = zfs;
    this.controller = controller;
    this.config = config;
    this.clock = clock;
  }

  private volatile boolean attached;

  @Override
  public void attach() {
    attached = true;
  }

  boolean attached() {
    return attached;
  }

  @Override
  public Map<String, ReplicationSettings> replicated() {
    return guard(() -> {
      Map<String, ReplicationSettings> out = new TreeMap<>();
      for (VolumeId v : controller.ownVolumes()) {
        controller.managedVolume(v).flatMap(LocalReplication::settingsOf).ifPresent(r -> out.put(v.id(), r));
      }
      return out;
    });
  }

  @Override
  public Optional<ReplicationSettings> settings(String volumeId) {
    return guard(() -> {
      VolumeId v = controller.own("volume_id", volumeId);
      if (!controller.inScope(v)) {
        return Optional.empty();
      }
      return controller.managedVolume(v).map(p -> settingsOf(p).orElse(ReplicationSettings.NONE));
    });
  }

  /** The settings recorded on a volume, when it is replicated. */
  private static Optional<ReplicationSettings> settingsOf(DatasetProperties p) {
    Optional<String> replicas = p.userProperty(LocalController.PROP_REPLICAS);
    if (replicas.isEmpty()) {
      return Optional.empty();
    }
    Map<String, String> asked = new TreeMap<>();
    asked.put(ReplicationSettings.REPLICAS, replicas.get());
    p.userProperty(LocalController.PROP_REPLICATION_INTERVAL).ifPresent(i -> asked.put(ReplicationSettings.INTERVAL, i));
    p.userProperty(LocalController.PROP_REPLICA_NODES).ifPresent(n -> asked.put(ReplicationSettings.NODES, n));
    return Optional.of(ReplicationSettings.parse(asked)).filter(ReplicationSettings::on);
  }

  static boolean isReplicationSnapshotName(String shortName) {
    return LocalIds.REPLICATION_SNAPSHOT.matcher(shortName).matches();
  }

  /**
   * Whether {@code snapshot} ({@code dataset@name}) of volume {@code v} is one replication took: its name
   * and the mark it was taken with. A snapshot someone made by hand under a name like it is not, so
   * pruning and DeleteVolume never destroy it, and DeleteVolume counts it as the volume's snapshot.
   */
  boolean isOwnSnapshot(VolumeId v, String snapshot) {
    return ownSnapshotProperties(v, snapshot).isPresent();
  }

  /**
   * The properties of {@code snapshot} when it is one replication took, read once: the mark says
   * whose it is, and the same read gives its GUID.
   */
  private Optional<DatasetProperties> ownSnapshotProperties(VolumeId v, String snapshot) {
    if (!isReplicationSnapshotName(snapshot.substring(snapshot.indexOf('@') + 1))) {
      return Optional.empty();
    }
    DatasetProperties p = zfs.properties(snapshot);
    return p.userProperty(LocalController.PROP_NAME).filter(mark(v)::equals).map(m -> p);
  }

  private static String mark(VolumeId v) {
    return "replication of " + v.id();
  }

  // ---- the owner's side ----

  private VolumeId ownedVolume(String volumeId) {
    VolumeId v = controller.own("volume_id", volumeId);
    if (!controller.inScope(v) || controller.managedVolume(v).isEmpty()) {
      throw CsiException.notFound("volume_id " + volumeId + " does not exist");
    }
    return v;
  }

  @Override
  public List<Point> replicationSnapshots(String volumeId) {
    return guard(() -> points(ownedVolume(volumeId)));
  }

  private List<Point> points(VolumeId v) {
    List<Point> out = new ArrayList<>();
    for (String full : zfs.snapshots(v.dataset())) {
      ownSnapshotProperties(v, full).ifPresent(p -> out.add(new Point(full.substring(full.indexOf('@') + 1), p.guid())));
    }
    return out;
  }

  @Override
  public Point takeReplicationSnapshot(String volumeId) {
    return guard(() -> {
      VolumeId v = ownedVolume(volumeId);
      long millis = clock.millis();
      List<Point> existing = points(v);
      if (!existing.isEmpty()) {
        // Names sort as they were taken, also when the clock steps back.
        millis = Math.max(millis, Long.parseLong(existing.getLast().name().substring(SNAPSHOT_PREFIX.length())) + 1);
      }
      String name = SNAPSHOT_PREFIX + millis;
      try {
        // Taken as a CSI snapshot is: frozen while staged here when local.freeze-on-snapshot says so.
        ZfsErrorsToCsi.run(() -> controller.snapshotMaybeFrozen(v.dataset(), name,
            Map.of(LocalController.PROP_NAME, mark(v)), config.freezeOnSnapshot()));
      } catch (CsiException e) {
        if (e.kind() != CsiException.Kind.RESOURCE_EXHAUSTED) {
          throw e;
        }
        throw new CsiException(CsiException.Kind.RESOURCE_EXHAUSTED, "no room for the replication snapshot of "
            + volumeId + ": " + e.getMessage() + ". Nothing was sent and the copies stay at their last snapshot;"
            + " free space where " + v.dataset() + " lives (its pool, or a quota above it) for the next round", e);
      }
      CrashPoints.reach("local.replication.point.after-snapshot");
      return new Point(name, zfs.properties(v.dataset() + "@" + name).guid());
    });
  }

  @Override
  public long send(String volumeId, Optional<String> from, String to, OutputStream out) throws IOException {
    String dataset = guard(() -> ownedVolume(volumeId).dataset());
    ZfsStreams streams = zfs.streams();
    OutputStream sent = CrashPoints.armed() ? new FilterOutputStream(out) {
      private long written;

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
        written += len;
        if (written >= CRASH_POINT_BYTES) {
          out.flush(); // the receiver has begun when a kill test stops the sender here
          CrashPoints.reach("local.replication.send.after-first-mib");
        }
      }
    } : out;
    return io(() -> (from.isPresent()
        ? streams.incremental(dataset + "@" + from.get(), dataset + "@" + to)
        : streams.full(dataset + "@" + to)).writeTo(sent));
  }

  @Override
  public long resume(String volumeId, String token, OutputStream out) throws IOException {
    ResumeToken parsed = parse(token);
    String dataset = guard(() -> ownedVolume(volumeId).dataset());
    if (!dataset.equals(parsed.snapshot().substring(0, parsed.snapshot().indexOf('@')))) {
      throw CsiException.invalid("resume_token is of " + parsed.snapshot() + ", not of volume " + volumeId);
    }
    try {
      return io(() -> zfs.streams().resume(parsed).writeTo(out));
    } catch (CsiException e) {
      if (e.getCause() instanceof StreamRefusedException) {
        throw CsiException.failedPrecondition(e.getMessage());
      }
      throw e;
    }
  }

  @Override
  public String resumedSnapshot(String token) {
    String snapshot = parse(token).snapshot();
    return snapshot.substring(snapshot.indexOf('@') + 1);
  }

  private static ResumeToken parse(String token) {
    try {
      return ResumeToken.parse(token);
    } catch (RuntimeException e) {
      throw CsiException.invalid("resume_token is not a ZFS resume token: " + e.getMessage());
    }
  }

  @Override
  public void prune(String volumeId, Set<Long> keep) {
    guard(() -> {
      VolumeId v = ownedVolume(volumeId);
      for (Point p : points(v)) {
        if (!keep.contains(p.guid())) {
          zfs.destroySnapshot(v.dataset() + "@" + p.name());
        }
      }
      return null;
    });
  }

  /** Destroys every replication snapshot of a volume about to be deleted, one at a time. */
  void destroyAll(VolumeId v) {
    for (String full : zfs.snapshots(v.dataset())) {
      if (isOwnSnapshot(v, full)) {
        zfs.destroySnapshot(full);
      }
    }
  }

  // ---- a replica's side ----

  /** The replica dataset of a volume on this node, where its first copy is received. */
  String replicaDataset(String volumeId) {
    LocalIds.parseVolume("volume_id", volumeId);
    return config.parentIn(config.defaultPool()) + "/" + REPLICA_PREFIX + IdRules.nameHash(volumeId);
  }

  /**
   * The two datasets a volume's copy can be in: a full refresh is received into the one the copy is not
   * in, so that the copy stays whole until the new one is.
   */
  private List<String> places(String volumeId) {
    String first = replicaDataset(volumeId);
    return List.of(first, first + REFRESH_SUFFIX);
  }

  /** One of a volume's replica datasets as found: its complete snapshots, oldest first. */
  private record Place(String dataset, List<String> snapshots) {
    /** The short name of its newest complete snapshot. */
    Optional<String> newest() {
      return snapshots.isEmpty() ? Optional.empty()
          : Optional.of(snapshots.getLast().substring(snapshots.getLast().indexOf('@') + 1));
    }

    /** When its newest complete snapshot was taken, from its name. */
    Optional<Instant> taken() {
      return newest().flatMap(Replication::pointTime);
    }
  }

  /** The volume's replica datasets that exist here, each checked to be its replica. */
  private List<Place> found(String volumeId) {
    List<Place> out = new ArrayList<>();
    for (String dataset : places(volumeId)) {
      if (replica(volumeId, dataset).isPresent()) {
        out.add(new Place(dataset, zfs.exists(dataset) ? zfs.snapshots(dataset) : List.of()));
      }
    }
    return out;
  }

  /**
   * The copy: of the places holding a complete snapshot, the one whose newest is the newest (both hold
   * one only while a refresh's old copy waits to be destroyed).
   */
  private static Optional<Place> copy(List<Place> found) {
    return found.stream().filter(p -> p.taken().isPresent()).max(Comparator.comparing(p -> p.taken().get()));
  }

  @Override
  public Optional<String> replicaLocation(String volumeId) {
    try {
      return Optional.of(guard(() -> copy(found(volumeId)).map(Place::dataset).orElse(replicaDataset(volumeId))));
    } catch (CsiException e) {
      return Optional.of(replicaDataset(volumeId));
    }
  }

  private Optional<DatasetProperties> replica(String volumeId, String dataset) {
    Optional<DatasetProperties> found = controller.find(dataset);
    if (found.isPresent() && !found.get().userProperty(PROP_REPLICA_OF).orElse("").equals(volumeId)
        && found.get().receiveResumeToken().isEmpty()) {
      throw CsiException.failedPrecondition(dataset + " exists and is not the replica of " + volumeId
          + " (its " + PROP_REPLICA_OF + " is " + found.get().userProperty(PROP_REPLICA_OF).orElse("absent")
          + "); it is left untouched");
    }
    return found;
  }

  @Override
  public ReplicaState replicaState(String volumeId) {
    return guard(() -> {
      List<Place> found = found(volumeId);
      if (found.isEmpty()) {
        return new ReplicaState(false, Optional.empty(), Optional.empty());
      }
      Optional<Point> newest = copy(found).map(p -> new Point(p.newest().orElseThrow(),
          zfs.properties(p.snapshots().getLast()).guid()));
      Optional<String> token = found.stream().map(p -> zfs.streams().resumeToken(p.dataset()))
          .flatMap(Optional::stream).map(ResumeToken::text).findFirst();
      return new ReplicaState(true, newest, token);
    });
  }

  @Override
  public String afterABrokenStream() {
    return "the partial receive is kept, and the next round resumes it";
  }

  /**
   * Receives into the copy's dataset, or for a full stream onto a complete copy into the other one;
   * the old copy is destroyed only once the new one is whole, so a stream cut or a crash at any point
   * leaves a complete copy a restore can start from.
   */
  @Override
  public Point receive(String volumeId, String snapshot, StreamKind kind, InputStream in) throws IOException {
    if (!isReplicationSnapshotName(snapshot) || snapshot.contains("@") || snapshot.contains("/")) {
      throw CsiException.invalid("snapshot '" + IdRules.printable(snapshot) + "' is not a replication snapshot's name");
    }
    String target = guard(() -> target(volumeId, kind));
    InputStream stream = CrashPoints.armed() ? new FilterInputStream(in) {
      private long read;

      @Override
      public int read(byte[] b, int off, int len) throws IOException {
        int n = super.read(b, off, len);
        if (n > 0 && (read += n) >= CRASH_POINT_BYTES) {
          CrashPoints.reach("local.replica.receive.after-first-mib");
        }
        return n;
      }
    } : in;
    ZfsStreams.Received received = io(() -> zfs.streams().receive(target + "@" + snapshot, stream,
        Map.of(PROP_REPLICA_OF, volumeId)));
    CrashPoints.reach("local.replica.receive.before-cleanup");
    guard(() -> {
      for (String full : zfs.snapshots(target)) {
        if (!full.equals(received.snapshot())) {
          zfs.streams().destroyReplicaSnapshot(full, PROP_REPLICA_OF);
        }
      }
      for (String other : places(volumeId)) {
        if (!other.equals(target)) {
          destroyPlace(volumeId, other); // the copy this one replaces, or a receive it made useless
        }
      }
      return null;
    });
    return new Point(snapshot, received.guid());
  }

  /** Where a stream of {@code kind} goes, made ready for it. */
  private String target(String volumeId, StreamKind kind) {
    List<Place> found = found(volumeId);
    Optional<Place> copy = copy(found);
    return switch (kind) {
      case INCREMENTAL -> copy.map(Place::dataset).orElse(replicaDataset(volumeId));
      case RESUME -> found.stream().map(Place::dataset).filter(d -> zfs.streams().resumeToken(d).isPresent())
          .findFirst().orElse(copy.map(Place::dataset).orElse(replicaDataset(volumeId)));
      case FULL -> {
        // The owner sends in full only when no shared snapshot or resumable receive is of use: a partial
        // receive here is dead, and a complete copy stays until the new one is whole.
        for (Place p : found) {
          zfs.streams().abortPartialReceive(p.dataset());
        }
        String into = copy.isEmpty() ? replicaDataset(volumeId)
            : places(volumeId).stream().filter(d -> !d.equals(copy.get().dataset())).findFirst().orElseThrow();
        destroyPlace(volumeId, into);
        yield into;
      }
    };
  }

  @Override
  public boolean deleteReplica(String volumeId) {
    return guard(() -> {
      boolean any = false;
      for (String dataset : places(volumeId)) {
        any |= destroyPlace(volumeId, dataset);
      }
      return any;
    });
  }

  /**
   * Destroys what a replica dataset holds (a partial receive, its snapshots, then the dataset, one leaf
   * at a time); false when it does not exist.
   */
  private boolean destroyPlace(String volumeId, String dataset) {
    if (replica(volumeId, dataset).isEmpty()) {
      return false;
    }
    zfs.streams().abortPartialReceive(dataset);
    if (!zfs.exists(dataset)) {
      return true; // it held only a full receive's partial state
    }
    for (String full : zfs.snapshots(dataset)) {
      zfs.streams().destroyReplicaSnapshot(full, PROP_REPLICA_OF);
    }
    zfs.streams().destroyReplica(dataset, PROP_REPLICA_OF);
    return true;
  }

  @Override
  public Set<String> replicas() {
    return guard(() -> {
      Set<String> out = new TreeSet<>();
      for (String pool : config.pools()) {
        String parent = config.parentIn(pool);
        if (zfs.pool(pool).isEmpty() || !zfs.exists(parent)) {
          continue;
        }
        for (String child : zfs.children(parent)) {
          if (child.substring(parent.length() + 1).startsWith(REPLICA_PREFIX)) {
            zfs.properties(child).userProperty(PROP_REPLICA_OF).ifPresent(out::add);
          }
        }
      }
      return out;
    });
  }

  /** A step that reads or writes a stream. */
  private interface IoBody<T> {
    T run() throws IOException;
  }

  /** A ZFS failure as the CSI status it maps to; an I/O failure of the stream passes through. */
  private static <T> T io(IoBody<T> body) throws IOException {
    IOException[] failed = new IOException[1];
    T out = guard(() -> {
      try {
        return body.run();
      } catch (IOException e) {
        failed[0] = e;
        return null;
      }
    });
    if (failed[0] != null) {
      throw failed[0];
    }
    return out;
  }
}

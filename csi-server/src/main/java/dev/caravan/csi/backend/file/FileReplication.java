package dev.caravan.csi.backend.file;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.backend.ReplicationSettings;
import dev.caravan.csi.backend.SnapshotInfo;
import dev.caravan.csi.backend.file.Records.State;
import dev.caravan.csi.backend.file.Records.VolumeRecord;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.support.PropertiesCodec;
import dev.caravan.storage.file.AtomicFiles;
import dev.caravan.storage.file.SparseFiles;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Replication on the {@code file} backend, for tests and trials without ZFS: a volume's image copied
 * to other nodes by changed blocks.
 *
 * <p><b>The owner.</b> A replication point {@code repl-<milliseconds>} is a copy of the image made
 * by the step CreateSnapshot uses (frozen while the volume is staged here), and its block digest
 * list: a SHA-256 per {@value #BLOCK}-byte block. A point's GUID is derived from that list, so two
 * sides that name the same GUID hold the same bytes. A stream carries the blocks whose digest differs
 * from the base point's (the one the replica holds), read from the copy; the copy is dropped once its
 * stream is written, and the digest list stays as the base of the next round. Under {@code
 * replication/<volume id>/} of the data directory: {@code settings}, and {@code repl-*.digests},
 * {@code repl-*.img} of the points.
 *
 * <p><b>A replica.</b> Under {@code replicas/rep-<hash of the volume id>/}: {@code replica-of} (the
 * volume id), and the newest complete copy {@code repl-*.img} with its digest list. A stream is
 * written into a new file (a clone of the last copy with the changed blocks written over it, or for a
 * full stream an empty one), synced, checked against the GUID the stream names, and only then renamed
 * into place: a stream cut at any point leaves the last complete copy as it was, and a copy that
 * shares nothing with its owner any more is refreshed in full without being dropped first. It is not
 * a volume: no volume record names it, so ListVolumes does not show it and nothing stages it.
 */
final class FileReplication implements Replication {
  static final int BLOCK = 64 * 1024;
  static final String PREFIX = "repl-";
  static final String REPLICA_PREFIX = "rep-";
  private static final Pattern POINT = Pattern.compile("repl-([0-9]{1,19})");
  private static final String SETTINGS = "settings";
  private static final String REPLICA_OF = "replica-of";
  private static final String IMG = ".img";
  private static final String DIGESTS = ".digests";
  private static final byte[] MAGIC = "CRVNREPL".getBytes(StandardCharsets.US_ASCII);
  private static final int VERSION = 1;
  private static final int DATA = 1;
  private static final int ZERO = 2;
  private static final int END = 0;
  private static final byte[] ZERO_BLOCK = new byte[BLOCK];

  private final FileStore store;
  private final FileController controller;
  private final String nodeId;
  private final boolean nodeScopedIds;
  private final Clock clock;
  private volatile boolean attached;

  FileReplication(FileStore store, FileController controller, String nodeId, boolean nodeScopedIds, Clock clock) {
    this.store = store;
    this.controller = controller;
    this.nodeId = nodeId;
    this.nodeScopedIds = nodeScopedIds;
    this.clock = clock;
  }

  @Override
  public void attach() {
    attached = true;
  }

  boolean attached() {
    return attached;
  }

  // ---- settings, kept beside the volume's record ----

  private Path ownerDir(String volumeId) {
    return store.dataDir().resolve("replication").resolve(volumeId);
  }

  /** Records a new volume's settings; before its record, so a ready volume always has them. */
  void recordSettings(String volumeId, ReplicationSettings r) {
    Path dir = ownerDir(volumeId);
    if (!r.on()) {
      FileStore.delete(dir.resolve(SETTINGS)); // a leftover of a create of the same name that was undone
      return;
    }
    Properties p = new Properties();
    p.setProperty(ReplicationSettings.REPLICAS, Integer.toString(r.replicas()));
    p.setProperty(ReplicationSettings.INTERVAL, r.interval().toSeconds() + "s");
    p.setProperty(ReplicationSettings.NODES, String.join(",", r.nodes()));
    mkdirs(dir);
    AtomicFiles.write(dir.resolve(SETTINGS), PropertiesCodec.encode(p, "caravan file backend replication settings"));
  }

  /** The settings recorded for a volume here, whatever its state; NONE when there are none. */
  ReplicationSettings recorded(String volumeId) {
    Path file = ownerDir(volumeId).resolve(SETTINGS);
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      return ReplicationSettings.NONE;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
    Properties p = PropertiesCodec.decode(bytes);
    Map<String, String> asked = new TreeMap<>();
    for (String key : p.stringPropertyNames()) {
      asked.put(key, p.getProperty(key));
    }
    return ReplicationSettings.parse(asked);
  }

  @Override
  public Map<String, ReplicationSettings> replicated() {
    Map<String, ReplicationSettings> out = new TreeMap<>();
    for (VolumeRecord r : store.volumes()) {
      if (r.state() == State.READY) {
        ReplicationSettings s = recorded(r.id());
        if (s.on()) {
          out.put(r.id(), s);
        }
      }
    }
    return out;
  }

  @Override
  public Optional<ReplicationSettings> settings(String volumeId) {
    requireVolumeId(volumeId);
    return controller.readyVolume(volumeId).map(r -> recorded(volumeId));
  }

  private static void requireVolumeId(String volumeId) {
    if (!FileIds.VOLUME.matcher(volumeId).matches() && !FileIds.SCOPED_VOLUME.matcher(volumeId).matches()) {
      throw CsiException.invalid("volume_id '" + IdRules.printable(volumeId) + "' is not of this backend's form: "
          + FileIds.VOLUME_FORM);
    }
  }

  // ---- the owner's side ----

  private VolumeRecord owned(String volumeId) {
    requireVolumeId(volumeId);
    return controller.readyVolume(volumeId)
        .orElseThrow(() -> CsiException.notFound("volume_id " + volumeId + " does not exist"));
  }

  /** The names of the points in {@code dir} that have a digest list, oldest first. */
  private static List<String> pointNames(Path dir) {
    List<String> names = new ArrayList<>();
    for (String f : list(dir)) {
      if (f.endsWith(DIGESTS) && POINT.matcher(f.substring(0, f.length() - DIGESTS.length())).matches()) {
        names.add(f.substring(0, f.length() - DIGESTS.length()));
      }
    }
    names.sort((a, b) -> Long.compare(millis(a), millis(b)));
    return names;
  }

  private static long millis(String point) {
    return Long.parseLong(point.substring(PREFIX.length()));
  }

  @Override
  public List<Point> replicationSnapshots(String volumeId) {
    owned(volumeId);
    Path dir = ownerDir(volumeId);
    List<Point> out = new ArrayList<>();
    for (String name : pointNames(dir)) {
      out.add(new Point(name, Digests.read(dir.resolve(name + DIGESTS)).guid()));
    }
    return out;
  }

  @Override
  public Point takeReplicationSnapshot(String volumeId) {
    VolumeRecord r = owned(volumeId);
    Path dir = ownerDir(volumeId);
    mkdirs(dir);
    long millis = clock.millis();
    List<String> existing = pointNames(dir);
    if (!existing.isEmpty()) {
      millis = Math.max(millis, millis(existing.getLast()) + 1); // names sort as taken, also when the clock steps back
    }
    String name = PREFIX + millis;
    Path image = dir.resolve(name + IMG);
    Path partial = FileStore.partial(image);
    // One round at a time per volume (the scheduler's rule), and a round's copy lives only until its stream
    // is sent: a copy or partial copy here is an earlier round's, which a crash cut short.
    removeLeftovers(dir);
    for (String f : list(dir)) {
      if (f.endsWith(IMG) && ownFile(f)) {
        FileStore.delete(dir.resolve(f));
      }
    }
    // The step CreateSnapshot takes: frozen while staged here, a reflink when attached unfrozen.
    controller.copyAtOneInstant("volume_id", volumeId, partial, () -> {});
    CrashPoints.reach("replication.point.after-copy");
    Digests d;
    try {
      d = Digests.of(partial, r.sizeBytes(), r.encrypted());
    } catch (RuntimeException e) {
      FileStore.delete(partial);
      throw e;
    }
    AtomicFiles.write(dir.resolve(name + DIGESTS), d.encode());
    CrashPoints.reach("replication.point.after-digests");
    FileStore.publish(partial, image);
    return new Point(name, d.guid());
  }

  @Override
  public long send(String volumeId, Optional<String> from, String to, OutputStream out) throws IOException {
    owned(volumeId);
    Path dir = ownerDir(volumeId);
    requirePointName(to);
    from.ifPresent(FileReplication::requirePointName);
    Path image = dir.resolve(to + IMG);
    try {
      Digests target = Digests.read(dir.resolve(to + DIGESTS));
      Optional<Digests> base = from.map(f -> Digests.read(dir.resolve(f + DIGESTS)));
      if (!Files.exists(image)) {
        throw CsiException.failedPrecondition("replication point " + to + " of " + volumeId + " has no copy any more;"
            + " the next round takes a new one");
      }
      Counting counted = new Counting(out);
      DataOutputStream o = new DataOutputStream(new BufferedOutputStream(counted, BLOCK + 64));
      o.write(MAGIC);
      o.writeInt(VERSION);
      o.writeLong(base.map(Digests::guid).orElse(0L));
      o.writeLong(target.guid());
      o.writeLong(target.imageBytes());
      o.writeLong(target.sizeBytes());
      o.writeBoolean(target.encrypted());
      o.writeInt(BLOCK);
      long records = 0;
      boolean sentData = false;
      byte[] block = new byte[BLOCK];
      try (FileChannel ch = FileChannel.open(image, StandardOpenOption.READ)) {
        for (int i = 0; i < target.count(); i++) {
          int length = target.length(i);
          byte[] had = base.isPresent() && i < base.get().count() ? base.get().blocks()[i] : zeroDigest(length);
          byte[] now = target.blocks()[i];
          if (Arrays.equals(had, now)) {
            continue;
          }
          records++;
          if (Arrays.equals(now, zeroDigest(length))) {
            o.writeInt(ZERO);
            o.writeLong(i);
            continue;
          }
          readFully(ch, block, length, (long) i * BLOCK);
          o.writeInt(DATA);
          o.writeLong(i);
          o.write(block, 0, length);
          if (!sentData) {
            sentData = true;
            o.flush(); // the receiver has begun its copy when a kill test stops the sender here
            CrashPoints.reach("replication.send.after-first-block");
          }
        }
      }
      o.writeInt(END);
      o.writeLong(records);
      o.flush();
      return counted.count;
    } finally {
      // Only the digest list is the next round's base: the copy served this stream alone.
      FileStore.delete(image);
    }
  }

  @Override
  public long resume(String volumeId, String token, OutputStream out) {
    throw CsiException.failedPrecondition("the file backend's replica streams do not resume: a cut stream is sent"
        + " again from the replica's last complete copy");
  }

  @Override
  public String resumedSnapshot(String token) {
    throw CsiException.invalid("the file backend's replicas have no resume tokens");
  }

  @Override
  public void prune(String volumeId, Set<Long> keep) {
    owned(volumeId);
    Path dir = ownerDir(volumeId);
    // A point's GUID is its digest list's, so the rounds of a volume that did not change take points of
    // one GUID: any of them is the same base, and only the newest is kept, or an idle volume's owner
    // would keep a digest list per round.
    Set<Long> newestSeen = new HashSet<>();
    for (String name : pointNames(dir).reversed()) {
      long guid = Digests.read(dir.resolve(name + DIGESTS)).guid();
      if (!keep.contains(guid) || !newestSeen.add(guid)) {
        FileStore.delete(FileStore.partial(dir.resolve(name + IMG)));
        FileStore.delete(dir.resolve(name + IMG));
        FileStore.delete(dir.resolve(name + DIGESTS));
      }
    }
  }

  /**
   * Removes what replication keeps for a volume being deleted (its settings and points): only files of
   * the names it makes; a file of another name keeps the directory, and is named in the log.
   */
  void forget(String volumeId) {
    Path dir = ownerDir(volumeId);
    if (!Files.isDirectory(dir)) {
      return;
    }
    for (String f : list(dir)) {
      if (f.equals(SETTINGS) || ownFile(f)) {
        FileStore.delete(dir.resolve(f));
      }
    }
    removeDir(dir);
  }

  /**
   * Removes what a cut stream or a crash left in a point or replica directory: partial copies and the
   * temporary files of digest lists, never a complete copy or a digest list.
   */
  private static void removeLeftovers(Path dir) {
    for (String f : list(dir)) {
      if (ownFile(f) && (f.endsWith(IMG + ".partial") || f.contains(DIGESTS + ".tmp-"))) {
        FileStore.delete(dir.resolve(f));
      }
    }
  }

  private static boolean ownFile(String f) {
    for (String suffix : List.of(IMG + ".partial", IMG, DIGESTS)) {
      if (f.endsWith(suffix) && POINT.matcher(f.substring(0, f.length() - suffix.length())).matches()) {
        return true;
      }
    }
    return f.startsWith("." + REPLICA_OF + ".tmp-") || f.startsWith("." + SETTINGS + ".tmp-")
        || (f.startsWith("." + PREFIX) && f.contains(DIGESTS + ".tmp-"));
  }

  private static void removeDir(Path dir) {
    try {
      Files.deleteIfExists(dir);
      FileStore.syncDir(dir.getParent());
    } catch (DirectoryNotEmptyException e) {
      throw CsiException.failedPrecondition(dir + " holds files replication did not make (" + list(dir)
          + "); they are left untouched, and so is the directory");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove " + dir, e);
    }
  }

  private static void requirePointName(String name) {
    if (!POINT.matcher(name).matches()) {
      throw CsiException.invalid("snapshot '" + IdRules.printable(name) + "' is not a replication point's name");
    }
  }

  // ---- a replica's side ----

  private Path replicasDir() {
    return store.dataDir().resolve("replicas");
  }

  private Path replicaDir(String volumeId) {
    return replicasDir().resolve(REPLICA_PREFIX + IdRules.nameHash(volumeId));
  }

  @Override
  public Optional<String> replicaLocation(String volumeId) {
    requireVolumeId(volumeId);
    return Optional.of(replicaDir(volumeId).toString());
  }

  /** The replica directory of the volume, when there is one; refused when it is another volume's. */
  private Optional<Path> replica(String volumeId) {
    requireVolumeId(volumeId);
    Path dir = replicaDir(volumeId);
    if (!Files.isDirectory(dir)) {
      return Optional.empty();
    }
    Optional<String> of = replicaOf(dir);
    if (of.isPresent() && !of.get().equals(volumeId)) {
      throw CsiException.failedPrecondition(dir + " exists and is the replica of " + of.get() + ", not of " + volumeId
          + "; it is left untouched");
    }
    return Optional.of(dir);
  }

  private static Optional<String> replicaOf(Path dir) {
    try {
      return Optional.of(Files.readString(dir.resolve(REPLICA_OF), StandardCharsets.UTF_8).strip());
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + dir.resolve(REPLICA_OF), e);
    }
  }

  /** The newest complete copy in a replica directory: its image and its digest list are both there. */
  private static Optional<String> newestCopy(Path dir) {
    List<String> names = pointNames(dir).stream().filter(n -> Files.exists(dir.resolve(n + IMG))).toList();
    return names.isEmpty() ? Optional.empty() : Optional.of(names.getLast());
  }

  @Override
  public ReplicaState replicaState(String volumeId) {
    Optional<Path> dir = replica(volumeId);
    if (dir.isEmpty()) {
      return new ReplicaState(false, Optional.empty(), Optional.empty());
    }
    Optional<Point> newest = newestCopy(dir.get())
        .map(n -> new Point(n, Digests.read(dir.get().resolve(n + DIGESTS)).guid()));
    return new ReplicaState(true, newest, Optional.empty());
  }

  @Override
  public String afterABrokenStream() {
    return "the last complete copy is kept and the partial one removed; the next round sends again";
  }

  @Override
  public Point receive(String volumeId, String snapshot, StreamKind kind, InputStream in) throws IOException {
    requirePointName(snapshot);
    if (kind == StreamKind.RESUME) {
      throw CsiException.failedPrecondition("the file backend's replica streams do not resume");
    }
    Optional<Path> found = replica(volumeId);
    Path dir = replicaDir(volumeId);
    Optional<String> newest = found.flatMap(FileReplication::newestCopy);
    if (kind == StreamKind.INCREMENTAL && newest.isEmpty()) {
      throw CsiException.failedPrecondition("the replica of " + volumeId + " on this node holds no complete copy"
          + " to apply changed blocks to; the next round sends a full copy");
    }
    if (found.isEmpty()) {
      mkdirs(dir);
    }
    if (replicaOf(dir).isEmpty()) {
      AtomicFiles.write(dir.resolve(REPLICA_OF), volumeId.getBytes(StandardCharsets.UTF_8));
    }
    removeLeftovers(dir);
    // A full stream onto a complete copy (its owner no longer has what they share) refreshes it: written
    // into a file of its own, the old copy kept until the new one is whole, synced and checked.
    Optional<String> from = kind == StreamKind.FULL ? Optional.empty() : newest;
    if (kind == StreamKind.FULL && newest.equals(Optional.of(snapshot))) {
      // Its digest list would be rewritten before its image: a crash between would pair them wrongly.
      throw CsiException.failedPrecondition("the replica of " + volumeId + " here already holds a copy named "
          + snapshot + "; a full stream needs a name of its own (the owner's clock stepped back?)");
    }
    Optional<Digests> base = from.map(n -> Digests.read(dir.resolve(n + DIGESTS)));
    DataInputStream d = new DataInputStream(new BufferedInputStream(in, BLOCK + 64));
    byte[] magic = new byte[MAGIC.length];
    d.readFully(magic);
    if (!Arrays.equals(magic, MAGIC) || d.readInt() != VERSION) {
      throw CsiException.invalid("the stream is not a file backend replica stream of version " + VERSION);
    }
    long fromGuid = d.readLong();
    long toGuid = d.readLong();
    long imageBytes = d.readLong();
    long sizeBytes = d.readLong();
    boolean encrypted = d.readBoolean();
    int blockSize = d.readInt();
    if (blockSize != BLOCK || imageBytes < 0 || imageBytes > FileController.MAX_SIZE + (64L << 20)) {
      throw CsiException.invalid("the stream's block size " + blockSize + " or image size " + imageBytes
          + " is not one this node takes");
    }
    if (fromGuid != base.map(Digests::guid).orElse(0L)) {
      throw CsiException.failedPrecondition("the stream's changed blocks are from copy " + fromGuid
          + ", and the replica of " + volumeId + " here holds " + base.map(Digests::guid).orElse(0L));
    }
    if (base.isPresent() && base.get().imageBytes() > imageBytes) {
      throw CsiException.failedPrecondition("the stream would shrink the replica of " + volumeId + " from "
          + base.get().imageBytes() + " to " + imageBytes + " bytes; volumes only grow");
    }
    Path image = dir.resolve(snapshot + IMG);
    Path partial = FileStore.partial(image);
    try {
      if (from.isPresent()) {
        SparseFiles.cloneFile(dir.resolve(from.get() + IMG), partial);
        SparseFiles.grow(partial, imageBytes);
      } else {
        SparseFiles.create(partial, imageBytes);
      }
      byte[][] digests = new byte[Digests.count(imageBytes)][];
      for (int i = 0; i < digests.length; i++) {
        int length = Digests.length(imageBytes, i);
        boolean same = base.isPresent() && i < base.get().count() && base.get().length(i) == length;
        digests[i] = same ? base.get().blocks()[i] : zeroDigest(length);
      }
      byte[] block = new byte[BLOCK];
      try (FileChannel ch = FileChannel.open(partial, StandardOpenOption.WRITE)) {
        long records = 0;
        while (true) {
          int k = d.readInt();
          if (k == END) {
            if (d.readLong() != records) {
              throw new IOException("the stream's end counts other records than it carried");
            }
            break;
          }
          long i = d.readLong();
          if ((k != DATA && k != ZERO) || i < 0 || i >= digests.length) {
            throw CsiException.invalid("the stream carries a record of kind " + k + " for block " + i
                + " of an image of " + digests.length + " blocks");
          }
          int length = Digests.length(imageBytes, (int) i);
          if (k == DATA) {
            d.readFully(block, 0, length);
            digests[(int) i] = sha256(block, length);
            writeFully(ch, block, length, i * BLOCK);
          } else {
            digests[(int) i] = zeroDigest(length);
            writeFully(ch, ZERO_BLOCK, length, i * BLOCK);
          }
          records++;
        }
        ch.force(true);
      }
      CrashPoints.reach("replica.receive.after-partial");
      Digests result = new Digests(imageBytes, sizeBytes, encrypted, digests);
      if (result.guid() != toGuid) {
        throw CsiException.failedPrecondition("the replica of " + volumeId + " after the stream holds copy "
            + result.guid() + ", not " + toGuid + " as the owner's " + snapshot + "; it is discarded, and the last"
            + " complete copy kept");
      }
      AtomicFiles.write(dir.resolve(snapshot + DIGESTS), result.encode());
      CrashPoints.reach("replica.receive.after-digests");
      FileStore.publish(partial, image);
      CrashPoints.reach("replica.receive.after-publish");
      for (String name : pointNames(dir)) {
        if (!name.equals(snapshot)) {
          FileStore.delete(dir.resolve(name + IMG));
          FileStore.delete(dir.resolve(name + DIGESTS));
        }
      }
      return new Point(snapshot, result.guid());
    } catch (IOException | RuntimeException e) {
      FileStore.delete(partial);
      if (e instanceof EOFException eof) {
        throw new IOException("the stream ended before its last record", eof);
      }
      throw e;
    }
  }

  @Override
  public boolean deleteReplica(String volumeId) {
    Optional<Path> dir = replica(volumeId);
    if (dir.isEmpty()) {
      return false;
    }
    for (String f : list(dir.get())) {
      if (ownFile(f)) {
        FileStore.delete(dir.get().resolve(f));
      }
    }
    FileStore.delete(dir.get().resolve(REPLICA_OF)); // last of its files: until then the directory says whose it is
    removeDir(dir.get());
    return true;
  }

  @Override
  public Set<String> replicas() {
    Set<String> out = new TreeSet<>();
    for (String f : list(replicasDir())) {
      if (f.startsWith(REPLICA_PREFIX)) {
        replicaOf(replicasDir().resolve(f)).ifPresent(out::add);
      }
    }
    return out;
  }

  // ---- a replica's newest copy as a snapshot ----

  /** A replica's copy as a snapshot: its image, and what CreateVolume from it needs to know. */
  record Copy(String snapshotId, String volumeId, Path image, long sizeBytes, boolean encrypted, Instant takenAt) {}

  /** The snapshot id of a replica's copy held here. */
  private String snapshotId(String volumeId, String point) {
    return "repl-" + IdRules.nameHash(volumeId) + "-" + millis(point) + (nodeScopedIds ? "." + nodeId : "");
  }

  /** The newest copy of each replica held here. */
  List<Copy> copies() {
    List<Copy> out = new ArrayList<>();
    for (String volumeId : replicas()) {
      newestCopyOf(volumeId).ifPresent(out::add);
    }
    return out;
  }

  private Optional<Copy> newestCopyOf(String volumeId) {
    Path dir = replicaDir(volumeId);
    return newestCopy(dir).map(n -> {
      Digests d = Digests.read(dir.resolve(n + DIGESTS));
      return new Copy(snapshotId(volumeId, n), volumeId, dir.resolve(n + IMG), d.sizeBytes(), d.encrypted(),
          Instant.ofEpochMilli(millis(n)));
    });
  }

  /** The copy a replica snapshot id names, while it is the newest of its replica here. */
  Optional<Copy> copy(String snapshotId) {
    Optional<String> h = FileIds.replicaSnapshot(snapshotId);
    if (h.isEmpty()) {
      return Optional.empty();
    }
    String hash = h.get();
    Path dir = replicasDir().resolve(REPLICA_PREFIX + hash);
    Optional<String> of = Files.isDirectory(dir) ? replicaOf(dir) : Optional.empty();
    return of.filter(v -> IdRules.nameHash(v).equals(hash)).flatMap(this::newestCopyOf)
        .filter(c -> c.snapshotId().equals(snapshotId));
  }

  static SnapshotInfo info(Copy c) {
    return new SnapshotInfo(c.snapshotId(), c.snapshotId(), c.volumeId(), c.sizeBytes(), c.takenAt(), true);
  }

  // ---- the digest list ----

  /** An image's size, what the volume records of it, and the SHA-256 of each of its blocks. */
  static final class Digests {
    private final long imageBytes;
    private final long sizeBytes;
    private final boolean encrypted;
    private final byte[][] blocks;

    Digests(long imageBytes, long sizeBytes, boolean encrypted, byte[][] blocks) {
      this.imageBytes = imageBytes;
      this.sizeBytes = sizeBytes;
      this.encrypted = encrypted;
      this.blocks = blocks;
    }

    long imageBytes() {
      return imageBytes;
    }

    long sizeBytes() {
      return sizeBytes;
    }

    boolean encrypted() {
      return encrypted;
    }

    /** The digests themselves, not a copy: this class's users only read them. */
    byte[][] blocks() {
      return blocks;
    }

    static int count(long imageBytes) {
      return Math.toIntExact((imageBytes + BLOCK - 1) / BLOCK);
    }

    static int length(long imageBytes, int i) {
      return (int) Math.min(BLOCK, imageBytes - (long) i * BLOCK);
    }

    int count() {
      return blocks.length;
    }

    int length(int i) {
      return length(imageBytes, i);
    }

    /** Derived from the bytes alone: equal on both sides exactly when they hold the same image. */
    long guid() {
      MessageDigest md = sha256();
      ByteBuffer head = ByteBuffer.allocate(17).putLong(imageBytes).putLong(sizeBytes).put((byte) (encrypted ? 1 : 0));
      md.update(head.array());
      for (byte[] b : blocks) {
        md.update(b);
      }
      long g = ByteBuffer.wrap(md.digest()).getLong();
      return g == 0 ? 1 : g; // 0 says "none" on the wire
    }

    static Digests of(Path image, long sizeBytes, boolean encrypted) {
      try (FileChannel ch = FileChannel.open(image, StandardOpenOption.READ)) {
        long imageBytes = ch.size();
        byte[][] blocks = new byte[count(imageBytes)][];
        byte[] block = new byte[BLOCK];
        for (int i = 0; i < blocks.length; i++) {
          int length = length(imageBytes, i);
          readFully(ch, block, length, (long) i * BLOCK);
          blocks[i] = sha256(block, length);
        }
        return new Digests(imageBytes, sizeBytes, encrypted, blocks);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + image, e);
      }
    }

    byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(MAGIC.length + 4 + 8 + 8 + 1 + 4 + 32 * blocks.length);
      b.put(MAGIC).putInt(VERSION).putLong(imageBytes).putLong(sizeBytes).put((byte) (encrypted ? 1 : 0))
          .putInt(blocks.length);
      for (byte[] d : blocks) {
        b.put(d);
      }
      return b.array();
    }

    static Digests read(Path file) {
      ByteBuffer b;
      try {
        b = ByteBuffer.wrap(Files.readAllBytes(file));
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + file, e);
      }
      byte[] magic = new byte[MAGIC.length];
      b.get(magic);
      if (!Arrays.equals(magic, MAGIC) || b.getInt() != VERSION) {
        throw new IllegalStateException(file + " is not a digest list of version " + VERSION);
      }
      long imageBytes = b.getLong();
      long sizeBytes = b.getLong();
      boolean encrypted = b.get() == 1;
      int n = b.getInt();
      if (n != count(imageBytes) || b.remaining() != 32L * n) {
        throw new IllegalStateException(file + " is not a whole digest list");
      }
      byte[][] blocks = new byte[n][32];
      for (byte[] d : blocks) {
        b.get(d);
      }
      return new Digests(imageBytes, sizeBytes, encrypted, blocks);
    }
  }

  private static byte[] zeroDigest(int length) {
    return length == BLOCK ? ZeroDigest.OF_A_BLOCK : sha256(ZERO_BLOCK, length);
  }

  /**
   * Made on first use, not when the backend starts: every file plugin makes this class, and the digest
   * is hashed by the interpreter before anything is compiled, on the way to the first Probe.
   */
  private static final class ZeroDigest {
    static final byte[] OF_A_BLOCK = sha256(ZERO_BLOCK, BLOCK);
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }

  private static byte[] sha256(byte[] data, int length) {
    MessageDigest md = sha256();
    md.update(data, 0, length);
    return md.digest();
  }

  private static void readFully(FileChannel ch, byte[] into, int length, long position) throws IOException {
    ByteBuffer buf = ByteBuffer.wrap(into, 0, length);
    while (buf.hasRemaining()) {
      int n = ch.read(buf, position + buf.position());
      if (n < 0) {
        Arrays.fill(into, buf.position(), length, (byte) 0); // past the end of a file that shrank: never for an image
        return;
      }
    }
  }

  private static void writeFully(FileChannel ch, byte[] from, int length, long position) throws IOException {
    ByteBuffer buf = ByteBuffer.wrap(from, 0, length);
    while (buf.hasRemaining()) {
      ch.write(buf, position + buf.position());
    }
  }

  private static void mkdirs(Path dir) {
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + dir, e);
    }
  }

  private static List<String> list(Path dir) {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    } catch (NoSuchFileException e) {
      return List.of();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + dir, e);
    }
  }

  /** Counts the bytes written through it. */
  private static final class Counting extends FilterOutputStream {
    long count;

    Counting(OutputStream out) {
      super(out);
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      count++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
      count += len;
    }
  }
}

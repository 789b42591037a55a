package dev.caravan.csi.backend.file;

import dev.caravan.csi.backend.file.Records.SnapshotRecord;
import dev.caravan.csi.backend.file.Records.VolumeRecord;
import dev.caravan.csi.backend.LuksMapping;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.file.AtomicFiles;
import dev.caravan.storage.file.SparseFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * On-disk layout of the file backend under its data directory:
 *
 * <pre>
 *   volumes/&lt;id&gt;.img            the volume's sparse data file (what the loop device maps)
 *   volumes/&lt;id&gt;.img.partial    data being written by an unfinished create
 *   volumes/&lt;id&gt;.meta           the volume's record (properties), replaced atomically
 *   snapshots/&lt;id&gt;.img, .img.partial, .meta   the same for snapshots
 *   freezing/&lt;volume id&gt;     a freeze of the volume's filesystem in progress ({@link Freezes})
 *   replication/&lt;volume id&gt;/  a replicated volume's settings and replication points ({@link FileReplication})
 *   replicas/rep-&lt;hash&gt;/      another node's volume's replica held here ({@link FileReplication})
 * </pre>
 */
final class FileStore {
  private static final String META = ".meta";

  private static final String PROBE = ".reflink-probe";

  private final Path dataDir;
  private final Path volumes;
  private final Path snapshots;
  private final Path freezing;
  private Boolean reflinks;

  FileStore(Path dataDir) {
    this.dataDir = dataDir;
    this.volumes = dataDir.resolve("volumes");
    this.snapshots = dataDir.resolve("snapshots");
    this.freezing = dataDir.resolve("freezing");
    try {
      Files.createDirectories(volumes);
      Files.createDirectories(snapshots);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the data directory " + dataDir, e);
    }
  }

  Path dataDir() {
    return dataDir;
  }

  /** Where freezes in progress are recorded (made by the first freeze). */
  Path freezing() {
    return freezing;
  }

  /**
   * Whether a volume image can be cloned into the snapshots directory by reflink (FICLONE): tried
   * once on two small files there, then remembered, since a directory does not change filesystem
   * under a running plugin.
   */
  synchronized boolean reflinks() {
    if (reflinks == null) {
      Path source = volumes.resolve(PROBE);
      Path target = snapshots.resolve(PROBE);
      delete(source);
      delete(target);
      try {
        SparseFiles.create(source, 4096);
        reflinks = SparseFiles.cloneFile(source, target) == SparseFiles.CopyMethod.REFLINK;
      } finally {
        delete(source);
        delete(target);
      }
    }
    return reflinks;
  }

  Path volumeImage(String id) {
    return volumes.resolve(id + ".img");
  }

  /**
   * The name of an encrypted volume's LUKS2 mapping, from its image's path: the same after a restart,
   * and distinct for two plugins on one host whose data directories hold volumes of the same id.
   */
  String mappingName(String volumeId) {
    return Luks2.mappingName("caravan-file:" + volumeImage(volumeId).toAbsolutePath());
  }

  /** An encrypted volume's LUKS2 mapping; {@code volume}'s secrets hold its passphrase when a step needs one. */
  LuksMapping mapping(VolumeRef volume) {
    return new LuksMapping(volume, mappingName(volume.volumeId()));
  }

  /** An encrypted volume's LUKS2 mapping, for a look that needs no passphrase. */
  LuksMapping mapping(String volumeId) {
    return mapping(new VolumeRef(volumeId, Map.of()));
  }

  Path snapshotImage(String id) {
    return snapshots.resolve(id + ".img");
  }

  static Path partial(Path image) {
    return image.resolveSibling(image.getFileName() + ".partial");
  }

  Optional<VolumeRecord> readVolume(String id) {
    return read(volumes.resolve(id + META), VolumeRecord::decode);
  }

  Optional<SnapshotRecord> readSnapshot(String id) {
    return read(snapshots.resolve(id + META), SnapshotRecord::decode);
  }

  void write(VolumeRecord r) {
    AtomicFiles.write(volumes.resolve(r.id() + META), r.encode());
  }

  void write(SnapshotRecord r) {
    AtomicFiles.write(snapshots.resolve(r.id() + META), r.encode());
  }

  void deleteVolumeRecord(String id) {
    delete(volumes.resolve(id + META));
    syncDir(volumes);
  }

  void deleteSnapshotRecord(String id) {
    delete(snapshots.resolve(id + META));
    syncDir(snapshots);
  }

  List<VolumeRecord> volumes() {
    return list(volumes, VolumeRecord::decode, VolumeRecord::id);
  }

  List<SnapshotRecord> snapshots() {
    return list(snapshots, SnapshotRecord::decode, SnapshotRecord::id);
  }

  /** Renames finished data into place and makes the rename durable. */
  static void publish(Path partial, Path image) {
    try {
      Files.move(partial, image, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot rename " + partial + " to " + image, e);
    }
    syncDir(image.getParent());
  }

  static void delete(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete " + file, e);
    }
  }

  static void syncDir(Path dir) {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot sync directory " + dir, e);
    }
  }

  private static <T> Optional<T> read(Path file, Function<byte[], T> decode) {
    try {
      return Optional.of(decode.apply(Files.readAllBytes(file)));
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read record " + file, e);
    }
  }

  private static <T> List<T> list(Path dir, Function<byte[], T> decode, Function<T, String> id) {
    List<T> out = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        if (f.getFileName().toString().endsWith(META)) {
          read(f, decode).ifPresent(out::add);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + dir, e);
    }
    out.sort(Comparator.comparing(id));
    return out;
  }
}

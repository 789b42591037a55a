package dev.caravan.csi.backend.file;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.backend.VolumeRequest;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The file backend's replication streams between two data directories, without peers: a replica
 * holds exactly the owner's bytes after each stream, an incremental carries the changed blocks, and a
 * stream that is corrupted or cut never replaces the last complete copy. The image is not attached
 * here, so a point is a plain copy of it.
 */
class FileReplicationTest {
  private static final long MIB = 1L << 20;
  private final Path work;
  private final FileStore ownerStore;
  private final FileController owner;
  private final FileReplication ownerSide;
  private final FileReplication replicaSide;
  private final FileStore replicaStore;

  FileReplicationTest() throws IOException {
    work = Files.createTempDirectory("caravan-file-replication-");
    ownerStore = new FileStore(work.resolve("n1"));
    owner = new FileController(ownerStore, "n1", NodeUsage.none(), true);
    ownerSide = (FileReplication) owner.replication().orElseThrow();
    replicaStore = new FileStore(work.resolve("n2"));
    replicaSide = (FileReplication) new FileController(replicaStore, "n2", NodeUsage.none(), true).replication()
        .orElseThrow();
  }

  @AfterEach
  void clean() throws IOException {
    try (Stream<Path> paths = Files.walk(work)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  private String volume() {
    return owner.provisionVolume(new VolumeRequest("v", new CapacityRange(8 * MIB, 0), Set.of(AccessType.BLOCK),
        Optional.empty(), Map.of(), Optional.empty(), List.of(), List.of(), Optional.empty())).volume().id();
  }

  private static void write(Path image, long offset, int bytes, long seed) throws IOException {
    byte[] data = new byte[bytes];
    new Random(seed).nextBytes(data);
    try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
      f.seek(offset);
      f.write(data);
    }
  }

  private byte[] send(String id, Optional<String> from, String to) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    long n = ownerSide.send(id, from, to, out);
    assertThat(n).isEqualTo(out.size());
    return out.toByteArray();
  }

  private Path replicaImage(String id) throws IOException {
    Path dir = replicaStore.dataDir().resolve("replicas/rep-" + dev.caravan.csi.backend.IdRules.nameHash(id));
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.toString().endsWith(".img")).findFirst().orElseThrow();
    }
  }

  private List<String> replicaFiles() throws IOException {
    try (Stream<Path> s = Files.walk(replicaStore.dataDir().resolve("replicas"))) {
      return s.map(p -> p.getFileName().toString()).filter(f -> f.endsWith(".partial")).toList();
    }
  }

  @Test
  void aReplicaHoldsTheOwnersBytesAndABadOrCutStreamNeverReplacesItsLastCopy() throws Exception {
    String id = volume();
    Path image = ownerStore.volumeImage(id);
    write(image, 0, (int) MIB, 1);
    write(image, 5 * MIB, 100_000, 2);

    Replication.Point p1 = ownerSide.takeReplicationSnapshot(id);
    byte[] full = send(id, Optional.empty(), p1.name());
    assertThat(full.length).as("a first copy skips the image's zero blocks").isLessThan((int) (2 * MIB));
    Replication.Point got = replicaSide.receive(id, p1.name(), Replication.StreamKind.FULL,
        new ByteArrayInputStream(full));
    assertThat(got).isEqualTo(p1);
    assertThat(Files.readAllBytes(replicaImage(id))).isEqualTo(Files.readAllBytes(image));
    assertThat(replicaSide.replicaState(id).newest()).contains(p1);

    write(image, 3 * MIB + 7, 10, 3); // two blocks' worth of change at most
    write(image, 7 * MIB, 64 * 1024, 4);
    Replication.Point p2 = ownerSide.takeReplicationSnapshot(id);
    byte[] changed = send(id, Optional.of(p1.name()), p2.name());
    assertThat(changed.length).as("an incremental carries the changed blocks").isLessThan(3 * 64 * 1024 + 1024);
    replicaSide.receive(id, p2.name(), Replication.StreamKind.INCREMENTAL, new ByteArrayInputStream(changed));
    byte[] second = Files.readAllBytes(image);
    assertThat(Files.readAllBytes(replicaImage(id))).isEqualTo(second);

    // A stream whose bytes were changed on the way: discarded, the copy kept.
    write(image, 2 * MIB, 1000, 5);
    Replication.Point p3 = ownerSide.takeReplicationSnapshot(id);
    byte[] bad = send(id, Optional.of(p2.name()), p3.name());
    byte[] corrupted = Arrays.copyOf(bad, bad.length);
    corrupted[49 + 12 + 100] ^= 1; // a byte of the first block's data, after the header and the record's head
    assertThatThrownBy(() -> replicaSide.receive(id, p3.name(), Replication.StreamKind.INCREMENTAL,
        new ByteArrayInputStream(corrupted)))
        .isInstanceOfSatisfying(CsiException.class, e -> {
          assertThat(e.kind()).isEqualTo(CsiException.Kind.FAILED_PRECONDITION);
          assertThat(e.getMessage()).contains("discarded");
        });
    assertThat(replicaSide.replicaState(id).newest()).contains(p2);
    assertThat(Files.readAllBytes(replicaImage(id))).isEqualTo(second);
    assertThat(replicaFiles()).as("partial files left").isEmpty();

    // A stream cut in the middle: the same.
    assertThatThrownBy(() -> replicaSide.receive(id, p3.name(), Replication.StreamKind.INCREMENTAL,
        new ByteArrayInputStream(Arrays.copyOf(bad, bad.length / 2)))).isInstanceOf(IOException.class);
    assertThat(replicaSide.replicaState(id).newest()).contains(p2);
    assertThat(Files.readAllBytes(replicaImage(id))).isEqualTo(second);
    assertThat(replicaFiles()).as("partial files left").isEmpty();

    // The intact stream of p3 still applies.
    replicaSide.receive(id, p3.name(), Replication.StreamKind.INCREMENTAL, new ByteArrayInputStream(bad));
    assertThat(replicaSide.replicaState(id).newest()).contains(p3);
    byte[] third = Files.readAllBytes(image);
    assertThat(replicaSide.copies()).singleElement().satisfies(c -> {
      assertThat(c.volumeId()).isEqualTo(id);
      assertThat(c.snapshotId()).isEqualTo(p3.name().replace("repl-",
          "repl-" + dev.caravan.csi.backend.IdRules.nameHash(id) + "-") + ".n2");
      assertThat(c.sizeBytes()).isEqualTo(8 * MIB);
    });

    // A full stream onto a complete copy (the owner no longer has what they share) refreshes it. Cut in the
    // middle, it leaves the copy as it was; whole, it replaces it, and the copy is never missing meanwhile.
    write(image, 6 * MIB, 5000, 6);
    Replication.Point p4 = ownerSide.takeReplicationSnapshot(id);
    byte[] fullAgain = send(id, Optional.empty(), p4.name());
    assertThatThrownBy(() -> replicaSide.receive(id, p4.name(), Replication.StreamKind.FULL,
        new ByteArrayInputStream(Arrays.copyOf(fullAgain, fullAgain.length / 2)))).isInstanceOf(IOException.class);
    assertThat(replicaSide.replicaState(id).newest()).contains(p3);
    assertThat(Files.readAllBytes(replicaImage(id))).isEqualTo(third);
    assertThat(replicaFiles()).as("partial files left").isEmpty();
    assertThat(replicaSide.receive(id, p4.name(), Replication.StreamKind.FULL, new ByteArrayInputStream(fullAgain)))
        .isEqualTo(p4);
    assertThat(replicaSide.replicaState(id).newest()).contains(p4);
    assertThat(Files.readAllBytes(replicaImage(id))).isEqualTo(Files.readAllBytes(image));

    // Rounds of a volume that did not change take points of one GUID: only the newest is kept.
    Replication.Point p5 = ownerSide.takeReplicationSnapshot(id);
    assertThat(p5.guid()).isEqualTo(p4.guid());
    ownerSide.prune(id, Set.of(p4.guid()));
    assertThat(ownerSide.replicationSnapshots(id)).containsExactly(p5);
    assertThat(replicaSide.deleteReplica(id)).isTrue();
    assertThat(replicaSide.replicas()).isEmpty();
    assertThat(replicaSide.deleteReplica(id)).isFalse();
    owner.deleteVolume(id);
    assertThat(ownerStore.dataDir().resolve("replication").resolve(id)).doesNotExist();
  }
}

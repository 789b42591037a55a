package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.Volume;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * Replication on the {@code file} backend killed at each of its steps: the owner while it takes a
 * replication point or sends it, the replica node while it writes, checks and renames a copy. The
 * node dies as SIGKILL leaves it (a plugin process of its own, armed with a {@link CrashPoints crash
 * point}); once it is back, the next round brings the copy up to date, the copy holds exactly the
 * owner's bytes, and neither node keeps anything the crash left: no partial copy, no temporary file,
 * no second copy, no copy image on the owner.
 */
public class ReplicationKillOnFileTest {
  private static final long MIB = 1L << 20;
  /** Steps of the owner's round: point taken (copy, digest list, rename), then the stream. */
  static final List<String> OWNER_STEPS = List.of("replication.point.after-copy", "replication.point.after-digests",
      "replication.send.after-first-block");
  /** Steps of a receive on the replica node: the copy written and synced, its digest list, its rename. */
  static final List<String> RECEIVER_STEPS = List.of("replica.receive.after-partial", "replica.receive.after-digests",
      "replica.receive.after-publish");
  /** Every step this suite kills at (KillConformance requires a case for every crash point of the sources). */
  public static final List<String> STEPS = Stream.concat(OWNER_STEPS.stream(), RECEIVER_STEPS.stream()).toList();

  private PeerCluster cluster;

  @AfterEach
  void stop() throws IOException {
    if (cluster != null) {
      cluster.close();
    }
  }

  /**
   * Two nodes in this JVM, and a volume on n1 replicated to n2 once an hour: its first round, at once,
   * makes the first copy; after that only the rounds the test starts run (a restarted plugin's first
   * round is at once too).
   */
  private String replicatedVolume() throws Exception {
    cluster = PeerCluster.start("n1", "n2");
    Volume v = cluster.csi("n1").createVolume(PeersTest.create("killed", "n1", 8 * MIB).toBuilder()
        .putParameters("replicas", "1").putParameters("replicationInterval", "1h").build()).getVolume();
    String id = v.getVolumeId();
    write(id, 0, 1);
    ReplicationOnFileTest.waitFor(Duration.ofSeconds(60), () -> replicaImage(id).isPresent(),
        "the first copy on n2");
    return id;
  }

  @ParameterizedTest
  @FieldSource("OWNER_STEPS")
  void anOwnerKilledMidRoundLeavesNothingAndItsNextRoundBringsTheCopyUpToDate(String step) throws Exception {
    String id = replicatedVolume();
    write(id, 3 * MIB, 2);
    cluster.stopNode("n1");
    cluster.startProcess("n1", Optional.of(step)); // its first round, at once, dies at the step
    assertThat(cluster.awaitExit("n1")).as("n1's exit at %s", step).isEqualTo(CrashPoints.EXIT_STATUS);

    cluster.startNode("n1");
    ReplicationOnFileTest.waitFor(Duration.ofSeconds(60), () -> upToDate(id),
        "n2's copy holding n1's bytes");
    assertConverged(id);
    cluster.csi("n1").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(cluster.files("n2", "replicas")).as("n2's replicas after DeleteVolume").isEmpty();
  }

  @ParameterizedTest
  @FieldSource("RECEIVER_STEPS")
  void aReplicaNodeKilledMidReceiveKeepsItsLastCopyAndTheNextRoundBringsItUpToDate(String step) throws Exception {
    String id = replicatedVolume();
    String before = replicaImage(id).orElseThrow();
    String bytesBefore = sha256(replicaDir(id).resolve(before));
    cluster.stopNode("n2");
    cluster.startProcess("n2", Optional.of(step));
    write(id, 5 * MIB, 3);
    Replicator.Attempt killed = replicator().replicate(id, "n2");
    assertThat(killed.failure()).as("the round whose receiver died at %s", step).isPresent();
    assertThat(cluster.awaitExit("n2")).as("n2's exit at %s", step).isEqualTo(CrashPoints.EXIT_STATUS);
    if (!step.equals("replica.receive.after-publish")) {
      assertThat(sha256(replicaDir(id).resolve(before))).as("the last complete copy, after the crash")
          .isEqualTo(bytesBefore);
    }

    cluster.startNode("n2");
    Replicator.Attempt next = replicator().replicate(id, "n2");
    assertThat(next.failure()).as("the round after n2's restart").isEmpty();
    assertThat(upToDate(id)).as("n2's copy holds n1's bytes").isTrue();
    assertConverged(id);
    cluster.csi("n1").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(cluster.files("n2", "replicas")).as("n2's replicas after DeleteVolume").isEmpty();
  }

  /** One complete copy on n2, nothing else of replication's there, and no copy image or partial file on n1. */
  private void assertConverged(String id) throws IOException {
    String copy = replicaImage(id).orElseThrow();
    String point = copy.substring(0, copy.length() - ".img".length());
    assertThat(PeerCluster.list(replicaDir(id))).as("n2's replica directory")
        .containsExactly(point + ".digests", point + ".img", "replica-of");
    assertThat(PeerCluster.list(ownerDir(id))).as("n1's replication directory: its settings and digest lists only")
        .contains("settings", point + ".digests")
        .allMatch(f -> f.equals("settings") || f.matches("repl-[0-9]+\\.digests"));
  }

  private Replicator replicator() {
    return cluster.node("n1").plugin.peering().orElseThrow().replicator().orElseThrow();
  }

  private Path image(String id) {
    return cluster.node("n1").fileImage(id);
  }

  private Path ownerDir(String id) {
    return cluster.node("n1").fileReplicationDir(id);
  }

  private Path replicaDir(String id) {
    return cluster.node("n2").fileReplicaDir(id);
  }

  /** The name of the one copy image in n2's replica directory; empty while there is none, or more than one. */
  private Optional<String> replicaImage(String id) {
    List<String> images = PeerCluster.list(replicaDir(id)).stream().filter(f -> f.matches("repl-[0-9]+\\.img")).toList();
    return images.size() == 1 ? Optional.of(images.getFirst()) : Optional.empty();
  }

  /** Whether n2 holds one copy, and it is n1's image byte for byte (nothing writes it meanwhile). */
  private boolean upToDate(String id) {
    try {
      Optional<String> copy = replicaImage(id);
      return copy.isPresent() && sha256(replicaDir(id).resolve(copy.get())).equals(sha256(image(id)));
    } catch (IOException e) {
      return false; // the copy was replaced while it was read
    }
  }

  /** Writes 1 MiB of seeded random bytes into n1's image of the volume, which is not attached. */
  private void write(String id, long offset, long seed) throws IOException {
    byte[] data = new byte[(int) MIB];
    new Random(seed).nextBytes(data);
    try (RandomAccessFile f = new RandomAccessFile(image(id).toFile(), "rw")) {
      f.seek(offset);
      f.write(data);
      f.getFD().sync();
    }
  }

  /** The SHA-256 of the file's bytes, in hex. */
  static String sha256(Path file) throws IOException {
    return sha256(Files.readAllBytes(file));
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }
}

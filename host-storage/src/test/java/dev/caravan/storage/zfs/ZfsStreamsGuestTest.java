package dev.caravan.storage.zfs;

import static dev.caravan.storage.zfs.GuestZfs.MIB;
import static dev.caravan.storage.zfs.GuestZfs.fresh;
import static dev.caravan.storage.zfs.GuestZfs.freshWithDevice;
import static dev.caravan.storage.zfs.GuestZfs.zfsGet;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.internal.zfs.Lzc;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.zfs.StreamRefusedException.Reason;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Replication streams against real OpenZFS: snapshots of a volume sent into Java streams and
 * received from them into another dataset, full then incremental, cut and resumed or aborted,
 * refused when they do not fit, and raw for an encrypted volume. The replica's data is compared
 * byte for byte, through the block device of a clone of each received snapshot, with an image of
 * what was written to the source. Runs in the guest only.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ZfsStreamsGuestTest {
  private static final int SIZE = (int) (32 * MIB);
  private static final Duration DEVICE_WAIT = Duration.ofSeconds(60);
  private static final Map<String, String> REPLICA = Map.of("caravan:replica-of", "test");
  private static final String PASSPHRASE = "Tr0ub4dor&3-replica";

  private static Zfs zfs;
  private static ZfsStreams streams;

  @BeforeAll
  static void open() {
    if (HostRequirements.hasZfs()) {
      zfs = Zfs.open();
      streams = zfs.streams();
    }
  }

  @BeforeEach
  void requireRealZfs() {
    HostRequirements.assumeZfs();
  }

  @AfterAll
  static void close() {
    if (zfs != null) {
      zfs.close();
    }
  }

  /** A source volume with a block device, and the image of what it holds. */
  private static final class Source {
    final String name;
    final byte[] image = new byte[SIZE];
    final Path device;

    Source(String hint, byte[] passphrase) {
      name = freshWithDevice(hint);
      ZvolSpec spec = ZvolSpec.of(name, SIZE).sparse(true);
      if (passphrase == null) {
        zfs.createZvol(spec);
      } else {
        zfs.createEncryptedZvol(spec, passphrase);
      }
      device = zfs.zvolDevice(name, DEVICE_WAIT);
    }

    /** Writes {@code length} pseudo-random bytes at {@code offset}, through the device. */
    void write(long seed, long offset, int length) throws IOException {
      byte[] data = GuestZfs.pattern(seed, length);
      GuestZfs.write(device, offset, data);
      System.arraycopy(data, 0, image, (int) offset, length);
    }

    /** Snapshots it; returns the snapshot and a copy of the image it holds. */
    Snap snapshot(String snapshotName) {
      return new Snap(zfs.snapshot(name, snapshotName), image.clone());
    }
  }

  /** A snapshot and the image of the volume it holds. */
  private static final class Snap {
    private final String name;
    private final byte[] image;

    Snap(String name, byte[] image) {
      this.name = name;
      this.image = image;
    }

    String name() {
      return name;
    }

    byte[] image() {
      return image;
    }

    long guid() {
      return zfs.properties(name).guid();
    }

    String shortName() {
      return name.substring(name.indexOf('@') + 1);
    }
  }

  // ---------------------------------------------------------------------------------------

  @Test
  void aFullStreamThenTwoIncrementalsReplicateAVolumeSnapshotBySnapshot() throws Exception {
    Source source = new Source("repl-src", null);
    source.write(1, 0, (int) (4 * MIB));
    Snap r1 = source.snapshot("r1");
    source.write(2, 8 * MIB, (int) (2 * MIB));
    Snap r2 = source.snapshot("r2");
    source.write(3, MIB, (int) MIB);
    source.write(4, 30 * MIB, (int) MIB);
    Snap r3 = source.snapshot("r3");

    String replica = fresh("repl-dst") + "/nested/vol"; // missing parents are made
    SendStream full = streams.full(r1.name());
    assertThat(full.raw()).isFalse();
    assertThat(full.from()).isEmpty();
    long estimate = full.estimatedSize();
    ZfsStreams.Received first = throughJavaPipe(full, replica + "@r1");
    System.out.printf("full stream of %s: estimated %d bytes, sent %d%n", r1.name(), estimate, first.bytes());
    assertThat(first.bytes()).isGreaterThan(4 * MIB);
    assertThat(estimate).isBetween(first.bytes() / 2, first.bytes() * 2);
    assertThat(first.guid()).isEqualTo(r1.guid());

    SendStream second = streams.incremental(r1.name(), r2.name());
    assertThat(second.from()).contains(r1.name());
    assertThat(throughJavaPipe(second, replica + "@r2").guid()).isEqualTo(r2.guid());
    ZfsStreams.Received third = throughBytes(streams.incremental(r2.name(), r3.name()), replica + "@r3");
    assertThat(third.guid()).isEqualTo(r3.guid());
    assertThat(third.bytes()).isLessThan(first.bytes());

    assertThat(zfs.snapshots(replica)).containsExactly(replica + "@r1", replica + "@r2", replica + "@r3");
    for (Snap snap : List.of(r1, r2, r3)) {
      assertThat(zfs.properties(replica + "@" + snap.shortName()).guid()).isEqualTo(snap.guid());
      assertReplicaHolds(replica + "@" + snap.shortName(), snap.image());
    }

    DatasetProperties received = zfs.properties(replica);
    assertThat(received.get("readonly").orElseThrow())
        .satisfies(p -> assertThat(p.value()).isEqualTo("1"))
        .satisfies(p -> assertThat(p.source()).isEqualTo(PropertySource.RECEIVED));
    assertThat(received.get("volmode").orElseThrow().value()).isEqualTo("3");
    assertThat(received.userProperty("caravan:replica-of")).contains("test");
    assertThat(received.isManagedBy(zfs.marker())).isFalse();
    assertThat(zfs.isUnfinishedCopy(received)).isFalse();
    assertThat(zfsGet("readonly", replica)).isEqualTo("on");
    assertThat(streams.resumeToken(replica)).isEmpty();
    assertThat(streams.abortPartialReceive(replica)).as("nothing to abort").isFalse();
  }

  @Test
  void aCutStreamLeavesAResumeTokenAndTheRestCompletesTheReceive() throws Exception {
    Source source = new Source("cut-src", null);
    source.write(5, 0, (int) (8 * MIB));
    Snap s1 = source.snapshot("s1");
    String replica = fresh("cut-dst");

    byte[] head = cutAfter(streams.full(s1.name()), 2 * MIB);
    assertThatThrownBy(() -> streams.receive(replica + "@s1", new ByteArrayInputStream(head), REPLICA))
        .isInstanceOf(ZfsException.class)
        .hasMessageContaining("receive " + replica + "@s1")
        .hasMessageContaining("partial receive is kept");
    ResumeToken token = streams.resumeToken(replica).orElseThrow();
    System.out.println("resume token of a cut full stream: " + token.text());
    assertThat(token.snapshot()).isEqualTo(s1.name());
    assertThat(token.snapshotGuid()).isEqualTo(s1.guid());
    assertThat(token.fromGuid()).isEmpty();
    assertThat(token.bytesReceived()).isPositive().isLessThanOrEqualTo(2 * MIB);
    // The token records the stream's features, not the flags asked for: blocks of 16 KiB are not
    // large, so the rest goes without LARGE_BLOCK, as the stream did.
    assertThat(token.largeBlocks()).isFalse();
    assertThat(token.embeddedData()).isTrue();
    assertThat(token.compressed()).isTrue();
    assertThat(token.raw()).isFalse();
    assertThat(zfs.properties(replica).isInconsistent()).isTrue();

    assertThatThrownBy(() -> throughBytes(streams.full(s1.name()), replica + "@s1"))
        .as("a new stream while a partial receive waits")
        .isInstanceOfSatisfying(
            StreamRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.PARTIAL_RECEIVE));

    SendStream rest = streams.resume(ResumeToken.parse(token.text()));
    assertThat(rest.resuming()).contains(token);
    assertThat(rest.estimatedSize()).isLessThan(streams.full(s1.name()).estimatedSize());
    ZfsStreams.Received done = throughBytes(rest, replica + "@s1");
    assertThat(done.bytes()).isLessThan(8 * MIB);
    assertThat(done.guid()).isEqualTo(s1.guid());
    assertThat(streams.resumeToken(replica)).isEmpty();
    assertThat(zfs.properties(replica).isInconsistent()).isFalse();
    assertReplicaHolds(replica + "@s1", s1.image());

    // An incremental cut short, then aborted: the replica is back where it was, and usable.
    source.write(6, 12 * MIB, (int) (4 * MIB));
    Snap s2 = source.snapshot("s2");
    byte[] incrementalHead = cutAfter(streams.incremental(s1.name(), s2.name()), MIB);
    assertThatThrownBy(() -> streams.receive(replica + "@s2", new ByteArrayInputStream(incrementalHead), REPLICA))
        .isInstanceOf(ZfsException.class);
    ResumeToken incremental = streams.resumeToken(replica).orElseThrow();
    assertThat(incremental.fromGuid()).hasValue(s1.guid());
    assertThat(incremental.snapshotGuid()).isEqualTo(s2.guid());
    assertThat(zfs.exists(replica + "/%recv")).isTrue();

    assertThat(streams.abortPartialReceive(replica)).isTrue();
    assertThat(zfs.exists(replica + "/%recv")).isFalse();
    assertThat(streams.resumeToken(replica)).isEmpty();
    assertThat(zfs.snapshots(replica)).containsExactly(replica + "@s1");
    assertThat(streams.abortPartialReceive(replica)).isFalse();
    assertThat(throughBytes(streams.incremental(s1.name(), s2.name()), replica + "@s2").guid()).isEqualTo(s2.guid());
    assertReplicaHolds(replica + "@s2", s2.image());
  }

  @Test
  void aFullReceiveCutByItsInputIsAbortedWithTheDatasetItWasCreating() throws Exception {
    Source source = new Source("abort-src", null);
    source.write(7, 0, (int) (4 * MIB));
    Snap s1 = source.snapshot("s1");
    byte[] head = cutAfter(streams.full(s1.name()), MIB);
    String replica = fresh("abort-dst");

    ReadableByteChannel breaking = new BreakingChannel(head);
    assertThatThrownBy(() -> streams.receive(replica + "@s1", breaking, REPLICA))
        .isInstanceOf(IOException.class)
        .hasMessage("connection reset (test)");
    assertThat(streams.resumeToken(replica)).isPresent();
    assertThat(zfs.properties(replica).isInconsistent()).isTrue();

    assertThat(streams.abortPartialReceive(replica)).isTrue();
    assertThat(zfs.exists(replica)).as("the dataset the receive was creating").isFalse();
    assertThat(zfs.exists(DatasetNames.parent(replica))).as("its parent stays").isTrue();
    assertThat(streams.abortPartialReceive(replica)).isFalse();
  }

  @Test
  void streamsThatDoNotFitTheTargetAreRefusedAndChangeNothing() throws Exception {
    Source source = new Source("refuse-src", null);
    source.write(8, 0, (int) MIB);
    Snap s1 = source.snapshot("s1");
    source.write(9, 4 * MIB, (int) MIB);
    Snap s2 = source.snapshot("s2");
    source.write(10, 8 * MIB, (int) (6 * MIB)); // more than a pipe holds: the sender must not hang
    Snap s3 = source.snapshot("s3");
    String replica = fresh("refuse-dst");
    throughBytes(streams.full(s1.name()), replica + "@s1");

    assertThatThrownBy(() -> throughJavaPipe(streams.incremental(s2.name(), s3.name()), replica + "@s3"))
        .isInstanceOfSatisfying(
            StreamRefusedException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(Reason.BASE_MISSING);
              assertThat(e.errnoName()).isEqualTo("ENODEV");
            })
        .hasMessageContaining(replica + " lacks the snapshot the incremental stream starts from")
        .hasMessageContaining("send it in full");
    assertThat(zfs.snapshots(replica)).containsExactly(replica + "@s1");
    assertThat(streams.resumeToken(replica)).isEmpty();
    assertThat(zfs.exists(replica + "/%recv")).isFalse();
    assertReplicaHolds(replica + "@s1", s1.image());

    String missing = fresh("refuse-none");
    assertThatThrownBy(() -> throughBytes(streams.incremental(s1.name(), s2.name()), missing + "@s2"))
        .isInstanceOfSatisfying(
            StreamRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.BASE_MISSING));
    assertThat(zfs.exists(missing)).isFalse();

    assertThatThrownBy(() -> throughBytes(streams.full(s2.name()), replica + "@s2"))
        .isInstanceOfSatisfying(
            StreamRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.TARGET_EXISTS));
    assertThat(zfs.snapshots(replica)).containsExactly(replica + "@s1");

    String managed = fresh("refuse-managed");
    zfs.createZvol(ZvolSpec.of(managed, SIZE).sparse(true));
    assertThatThrownBy(() -> throughBytes(streams.full(s1.name()), managed + "@s1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("it carries caravan:managed=true");
    assertThatThrownBy(
            () -> streams.receive(replica + "@x", new ByteArrayInputStream(new byte[0]), Map.of("caravan:managed", "true")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ownership marker");
    assertThatThrownBy(() -> streams.incremental(s2.name(), s1.name()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is not older than");
  }

  @Test
  void aSenderFailureIsReportedAsTheSendsAndAConsumerFailureAsItsOwn() throws Exception {
    Source source = new Source("fail-src", null);
    source.write(11, 0, (int) (8 * MIB));
    String gone = source.name + "@gone";
    GuestZfs.plainSnapshot(gone);
    SendStream stream = streams.full(gone);
    ZfsFailures.orThrow(Lzc.destroySnapshots(List.of(gone)), "destroy", gone);
    ByteArrayOutputStream nothing = new ByteArrayOutputStream();
    assertThatThrownBy(() -> stream.writeTo(nothing))
        .isInstanceOfSatisfying(
            ZfsException.class,
            e -> {
              assertThat(e.operation()).isEqualTo("send");
              assertThat(e.dataset()).isEqualTo(gone);
              assertThat(e.errnoName()).isEqualTo("ENOENT");
            });
    assertThat(nothing.size()).isZero();

    Snap s1 = source.snapshot("s1");
    long started = System.nanoTime();
    assertThatThrownBy(() -> streams.full(s1.name()).writeTo(new CuttingStream(64 * 1024)))
        .isInstanceOf(IOException.class)
        .hasMessage("peer went away (test)")
        .hasNoSuppressedExceptions();
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(30));
  }

  @Test
  void anEncryptedVolumeTravelsRawAndItsReplicaOpensWithThePassphrase() throws Exception {
    byte[] passphrase = PASSPHRASE.getBytes(StandardCharsets.UTF_8);
    Source source = new Source("enc-src", passphrase);
    source.write(12, 0, (int) (2 * MIB));
    Snap e1 = source.snapshot("e1");
    source.write(13, 16 * MIB, (int) MIB);
    Snap e2 = source.snapshot("e2");
    String replica = fresh("enc-dst");

    SendStream full = streams.full(e1.name());
    assertThat(full.raw()).isTrue();
    throughJavaPipe(full, replica + "@e1");
    SendStream incremental = streams.incremental(e1.name(), e2.name());
    assertThat(incremental.raw()).isTrue();
    assertThat(throughBytes(incremental, replica + "@e2").guid()).isEqualTo(e2.guid());

    DatasetProperties received = zfs.properties(replica);
    assertThat(received.isEncrypted()).isTrue();
    assertThat(received.encryptionRoot()).contains(replica);
    assertThat(received.keyStatus()).as("a raw stream carries no key").isEqualTo(KeyStatus.UNAVAILABLE);
    assertThat(zfsGet("keystatus", replica)).isEqualTo("unavailable");

    assertThat(withInput(PASSPHRASE + "\n", "zfs", "load-key", replica)).as("zfs load-key").isZero();
    assertThat(zfs.keyStatus(replica)).isEqualTo(KeyStatus.AVAILABLE);
    assertReplicaHolds(replica + "@e2", e2.image());
  }

  // ---------------------------------------------------------------------------------------

  /** Reads the whole volume at {@code snapshot} through a dependent clone's block device. */
  private static void assertReplicaHolds(String snapshot, byte[] expected) throws IOException {
    String clone = freshWithDevice("check");
    GuestZfs.dependentClone(snapshot, clone);
    byte[] data = GuestZfs.read(zfs.zvolDevice(clone, DEVICE_WAIT), 0, expected.length);
    assertThat(Arrays.mismatch(data, expected)).as("first byte of %s that differs", snapshot).isEqualTo(-1);
  }

  /**
   * Sends on a thread into a Java pipe that this thread receives from, as a network stream would
   * run. When the receive fails first, closing the pipe's source ends the sender (its write fails).
   */
  private static ZfsStreams.Received throughJavaPipe(SendStream stream, String target) throws Exception {
    Pipe pipe = Pipe.open();
    AtomicReference<Exception> sendFailure = new AtomicReference<>();
    Thread sender =
        Thread.ofPlatform()
            .start(
                () -> {
                  try (var sink = pipe.sink()) {
                    stream.writeTo(sink);
                  } catch (Exception e) {
                    sendFailure.set(e);
                  }
                });
    try (var source = pipe.source()) {
      return streams.receive(target, source, REPLICA);
    } finally {
      sender.join(Duration.ofSeconds(60));
      assertThat(sender.isAlive()).as("the sender ended").isFalse();
    }
  }

  /** Sends into memory, then receives from it. */
  private static ZfsStreams.Received throughBytes(SendStream stream, String target) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    long sent = stream.writeTo(bytes);
    assertThat(sent).isEqualTo(bytes.size());
    return streams.receive(target, new ByteArrayInputStream(bytes.toByteArray()), REPLICA);
  }

  /** The first {@code limit} bytes of the stream: what a peer got before the connection broke. */
  private static byte[] cutAfter(SendStream stream, long limit) {
    CuttingStream out = new CuttingStream(limit);
    assertThatThrownBy(() -> stream.writeTo(out)).isInstanceOf(IOException.class);
    return out.toByteArray();
  }

  /** Keeps {@code limit} bytes, then fails as a broken connection does. */
  private static final class CuttingStream extends OutputStream {
    private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
    private final long limit;

    CuttingStream(long limit) {
      this.limit = limit;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      int room = (int) Math.min(len, limit - kept.size());
      kept.write(b, off, room);
      if (room < len) {
        throw new IOException("peer went away (test)");
      }
    }

    byte[] toByteArray() {
      return kept.toByteArray();
    }
  }

  /** Yields {@code data}, then fails as a reset connection does. */
  private static final class BreakingChannel implements ReadableByteChannel {
    private final ByteBuffer data;

    BreakingChannel(byte[] data) {
      this.data = ByteBuffer.wrap(data);
    }

    @Override
    public int read(ByteBuffer target) throws IOException {
      if (!data.hasRemaining()) {
        throw new IOException("connection reset (test)");
      }
      int length = Math.min(target.remaining(), data.remaining());
      target.put(data.slice(data.position(), length));
      data.position(data.position() + length);
      return length;
    }

    @Override
    public boolean isOpen() {
      return true;
    }

    @Override
    public void close() {}
  }

  /** Runs a CLI command with {@code input} on its standard input; its exit status. */
  private static int withInput(String input, String... command) {
    try {
      Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
      try (var in = process.getOutputStream()) {
        in.write(input.getBytes(StandardCharsets.UTF_8));
      }
      process.getInputStream().readAllBytes();
      assertThat(process.waitFor(120, TimeUnit.SECONDS)).isTrue();
      return process.exitValue();
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}

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
 * byte for byte, through the block device of a clone of a received snapshot, with an image of
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

    Source(String name) {
      this.name = name;
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

  // One source volume serves every test but the encrypted one: each zvol device costs seconds of
  // udev work in the guest. Its snapshots: p1 holds 4 MiB, p2 2 MiB more (more than a pipe holds,
  // so a sender or receiver that stopped reading would block), p3 two MiB changed.
  private static Source plain;
  private static Snap p1;
  private static Snap p2;
  private static Snap p3;

  private static synchronized void plainSource() throws IOException {
    if (plain != null) {
      return;
    }
    String name = freshWithDevice("repl-src");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    plain = new Source(name);
    plain.write(1, 0, (int) (4 * MIB));
    p1 = plain.snapshot("p1");
    plain.write(2, 8 * MIB, (int) (2 * MIB));
    p2 = plain.snapshot("p2");
    plain.write(3, MIB, (int) MIB);
    plain.write(4, 30 * MIB, (int) MIB);
    p3 = plain.snapshot("p3");
  }

  // ---------------------------------------------------------------------------------------

  @Test
  void aFullStreamThenTwoIncrementalsReplicateAVolumeSnapshotBySnapshot() throws Exception {
    plainSource();
    String replica = fresh("repl-dst") + "/nested/vol"; // missing parents are made
    SendStream full = streams.full(p1.name());
    assertThat(full.raw()).isFalse();
    assertThat(full.from()).isEmpty();
    long estimate = full.estimatedSize();
    ZfsStreams.Received first = throughJavaPipe(full, replica + "@p1");
    System.out.printf("full stream of %s: estimated %d bytes, sent %d%n", p1.name(), estimate, first.bytes());
    assertThat(first.bytes()).isGreaterThan(4 * MIB);
    assertThat(estimate).isBetween(first.bytes() / 2, first.bytes() * 2);
    assertThat(first.guid()).isEqualTo(p1.guid());

    SendStream second = streams.incremental(p1.name(), p2.name());
    assertThat(second.from()).contains(p1.name());
    assertThat(throughJavaPipe(second, replica + "@p2").guid()).isEqualTo(p2.guid());
    ZfsStreams.Received third = throughBytes(streams.incremental(p2.name(), p3.name()), replica + "@p3");
    assertThat(third.guid()).isEqualTo(p3.guid());
    assertThat(third.bytes()).isLessThan(first.bytes());

    assertThat(zfs.snapshots(replica)).containsExactly(replica + "@p1", replica + "@p2", replica + "@p3");
    for (Snap snap : List.of(p1, p2, p3)) {
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
  void cutStreamsLeaveResumeTokensAndTheirRestCompletesTheReceive() throws Exception {
    plainSource();
    String replica = fresh("cut-dst");

    byte[] head = cutAfter(streams.full(p1.name()), MIB);
    assertThatThrownBy(() -> streams.receive(replica + "@p1", new ByteArrayInputStream(head), REPLICA))
        .isInstanceOf(ZfsException.class)
        .hasMessageContaining("receive " + replica + "@p1")
        .hasMessageContaining("partial receive is kept");
    ResumeToken token = streams.resumeToken(replica).orElseThrow();
    System.out.println("resume token of a cut full stream: " + token.text());
    assertThat(token.snapshot()).isEqualTo(p1.name());
    assertThat(token.snapshotGuid()).isEqualTo(p1.guid());
    assertThat(token.fromGuid()).isEmpty();
    assertThat(token.bytesReceived()).isPositive().isLessThanOrEqualTo(MIB);
    // The token records the stream's features, not the flags asked for: blocks of 16 KiB are not
    // large, so the rest goes without LARGE_BLOCK, as the stream did.
    assertThat(token.largeBlocks()).isFalse();
    assertThat(token.embeddedData()).isTrue();
    assertThat(token.compressed()).isTrue();
    assertThat(token.raw()).isFalse();
    assertThat(zfs.properties(replica).isInconsistent()).isTrue();

    assertThatThrownBy(() -> throughBytes(streams.full(p1.name()), replica + "@p1"))
        .as("a new stream while a partial receive waits")
        .isInstanceOfSatisfying(
            StreamRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.PARTIAL_RECEIVE));

    SendStream rest = streams.resume(ResumeToken.parse(token.text()));
    assertThat(rest.resuming()).contains(token);
    assertThat(rest.estimatedSize()).isLessThan(streams.full(p1.name()).estimatedSize());
    ZfsStreams.Received done = throughBytes(rest, replica + "@p1");
    assertThat(done.bytes()).isLessThan(4 * MIB);
    assertThat(done.guid()).isEqualTo(p1.guid());
    assertThat(streams.resumeToken(replica)).isEmpty();
    assertThat(zfs.properties(replica).isInconsistent()).isFalse();
    assertReplicaHolds(replica + "@p1", p1.image());

    // An incremental cut short and resumed: the base is found again by its GUID.
    byte[] incrementalHead = cutAfter(streams.incremental(p1.name(), p2.name()), 512 * 1024);
    assertThatThrownBy(() -> streams.receive(replica + "@p2", new ByteArrayInputStream(incrementalHead), REPLICA))
        .isInstanceOf(ZfsException.class);
    ResumeToken incremental = streams.resumeToken(replica).orElseThrow();
    assertThat(incremental.fromGuid()).hasValue(p1.guid());
    assertThat(incremental.snapshotGuid()).isEqualTo(p2.guid());
    assertThat(zfs.exists(replica + "/%recv")).isTrue();
    SendStream incrementalRest = streams.resume(incremental);
    assertThat(incrementalRest.from()).contains(p1.name());
    assertThat(throughBytes(incrementalRest, replica + "@p2").guid()).isEqualTo(p2.guid());
    assertThat(zfs.exists(replica + "/%recv")).isFalse();
    assertReplicaHolds(replica + "@p2", p2.image());

    // Another cut short, then aborted: the replica is back where it was, and takes the stream again.
    byte[] abortedHead = cutAfter(streams.incremental(p2.name(), p3.name()), 256 * 1024);
    assertThatThrownBy(() -> streams.receive(replica + "@p3", new ByteArrayInputStream(abortedHead), REPLICA))
        .isInstanceOf(ZfsException.class);
    assertThat(streams.resumeToken(replica)).isPresent();
    assertThat(streams.abortPartialReceive(replica)).isTrue();
    assertThat(zfs.exists(replica + "/%recv")).isFalse();
    assertThat(streams.resumeToken(replica)).isEmpty();
    assertThat(zfs.snapshots(replica)).containsExactly(replica + "@p1", replica + "@p2");
    assertThat(zfs.properties(replica + "@p2").guid()).isEqualTo(p2.guid());
    assertThat(streams.abortPartialReceive(replica)).isFalse();
    assertThat(throughBytes(streams.incremental(p2.name(), p3.name()), replica + "@p3").guid()).isEqualTo(p3.guid());
  }

  @Test
  void aFullReceiveCutByItsInputIsAbortedWithTheDatasetItWasCreating() throws Exception {
    plainSource();
    byte[] head = cutAfter(streams.full(p1.name()), MIB);
    String replica = fresh("abort-dst");

    ReadableByteChannel breaking = new BreakingChannel(head);
    assertThatThrownBy(() -> streams.receive(replica + "@p1", breaking, REPLICA))
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
    plainSource();
    String replica = fresh("refuse-dst");
    throughBytes(streams.full(p1.name()), replica + "@p1");
    long before = zfs.properties(replica).get("written").map(Property::asLong).orElseThrow();

    assertThatThrownBy(() -> throughJavaPipe(streams.incremental(p2.name(), p3.name()), replica + "@p3"))
        .isInstanceOfSatisfying(
            StreamRefusedException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(Reason.BASE_MISSING);
              assertThat(e.errnoName()).isEqualTo("ENODEV");
            })
        .hasMessageContaining(replica + " lacks the snapshot the incremental stream starts from")
        .hasMessageContaining("send it in full");
    assertThat(zfs.snapshots(replica)).containsExactly(replica + "@p1");
    assertThat(zfs.properties(replica + "@p1").guid()).isEqualTo(p1.guid());
    assertThat(zfs.properties(replica).get("written").map(Property::asLong).orElseThrow()).isEqualTo(before);
    assertThat(streams.resumeToken(replica)).isEmpty();
    assertThat(zfs.exists(replica + "/%recv")).isFalse();

    String missing = fresh("refuse-none");
    assertThatThrownBy(() -> throughBytes(streams.incremental(p1.name(), p2.name()), missing + "@p2"))
        .isInstanceOfSatisfying(
            StreamRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.BASE_MISSING));
    assertThat(zfs.exists(missing)).isFalse();

    assertThatThrownBy(() -> throughBytes(streams.full(p2.name()), replica + "@p2"))
        .isInstanceOfSatisfying(
            StreamRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.TARGET_EXISTS));
    assertThat(zfs.snapshots(replica)).containsExactly(replica + "@p1");

    String managed = fresh("refuse-managed");
    zfs.createZvol(ZvolSpec.of(managed, SIZE).sparse(true));
    assertThatThrownBy(() -> throughBytes(streams.full(p1.name()), managed + "@p1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("it carries caravan:managed=true");
    assertThatThrownBy(
            () -> streams.receive(replica + "@x", new ByteArrayInputStream(new byte[0]), Map.of("caravan:managed", "true")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ownership marker");
    assertThatThrownBy(() -> streams.incremental(p2.name(), p1.name()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is not older than");
  }

  @Test
  void aSenderFailureIsReportedAsTheSendsAndAConsumerFailureAsItsOwn() throws Exception {
    plainSource();
    String gone = plain.name + "@gone";
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

    long started = System.nanoTime();
    assertThatThrownBy(() -> streams.full(p3.name()).writeTo(new CuttingStream(64 * 1024)))
        .isInstanceOf(IOException.class)
        .hasMessage("peer went away (test)")
        .hasNoSuppressedExceptions();
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(30));
  }

  @Test
  void anEncryptedVolumeTravelsRawAndItsReplicaOpensWithThePassphrase() throws Exception {
    // Made by the zfs command with the fewest PBKDF2 iterations it allows: key derivation is slow
    // under the guest's emulated CPU, and the replica, which keeps them, is opened by it too.
    String name = freshWithDevice("enc-src");
    assertThat(GuestZfs.withInput(PASSPHRASE + "\n", "zfs", "create", "-s", "-V", Long.toString(SIZE), "-o", "encryption=on",
        "-o", "keyformat=passphrase", "-o", "keylocation=prompt", "-o", "pbkdf2iters=100000",
        "-o", "caravan:managed=true", name)).isZero();
    Source source = new Source(name);
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

    assertThat(GuestZfs.withInput(PASSPHRASE + "\n", "zfs", "load-key", replica)).as("zfs load-key").isZero();
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
}

package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.block.ScsiDisk;
import dev.caravan.storage.block.ScsiDisks;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.fs.FormatOutcome;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.iscsi.IscsiLoginException.Reason;
import dev.caravan.storage.mount.MountFlag;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.multipath.MapInUseException;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.multipath.MultipathMap;
import dev.caravan.storage.multipath.MultipathPath;
import dev.caravan.storage.multipath.PathState;
import dev.caravan.storage.testing.GuestIscsi;
import dev.caravan.storage.testing.LioTarget;
import dev.caravan.storage.testing.PortalOutage;
import dev.caravan.storage.testing.RecordWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The iscsi and multipath packages against the real thing: a LIO target in the guest kernel with
 * two portals, open-iscsi's iscsid and multipathd. Runs in the guest only (skips elsewhere, saying
 * why).
 */
class IscsiMultipathGuestTest {
  private static final long SIZE = 64L << 20;
  private static final Portal P1 = Portal.parse(GuestIscsi.PORTAL_1);
  private static final Portal P2 = Portal.parse(GuestIscsi.PORTAL_2);
  private static final Duration WAIT = Duration.ofSeconds(60);
  // Failing over takes the ping's detection (up to 15 s) plus the replacement timeout (15 s, or
  // multipathd's fast_io_fail_tmo, 5 s, once it has set it: the first guest run took 23 s);
  // coming back, iscsid's next re-login attempt (one may hang for its 15 s login timeout while
  // the portal is still dark) plus multipathd's checker. Generous: a bound on liveness, not speed.
  private static final Duration FAILOVER_WAIT = Duration.ofMinutes(2);

  private final Iscsi iscsi = Iscsi.system().withTimeout(Duration.ofSeconds(60));
  private final Multipath multipath = Multipath.system();

  @TempDir Path dir;

  private long last = System.nanoTime();

  /** Prints how long the step just finished took: where the guest's time goes, in the log. */
  private void step(String done) {
    long now = System.nanoTime();
    System.out.printf("  %-40s %6d ms%n", done, (now - last) / 1_000_000);
    last = now;
  }

  @BeforeEach
  void requireGuest() {
    GuestIscsi.assumeAvailable();
  }

  @Test
  void aLunOnTwoPortalsIsOneMultipathDeviceThatOutlivesAPathFailure() throws IOException {
    try (LioTarget target = LioTarget.create("mp", SIZE, dir, List.of(GuestIscsi.PORTAL_1, GuestIscsi.PORTAL_2))) {
      target.allow(iscsi.initiatorName());
      step("target");
      String iqn = target.iqn();

      assertThat(iscsi.discover(P1))
          .contains(new DiscoveredTarget(iqn, P1, 1), new DiscoveredTarget(iqn, P2, 1));
          step("discover");

      assertThat(iscsi.login(iqn, P1, Optional.empty())).isEqualTo(LoginOutcome.LOGGED_IN);
      assertThat(iscsi.login(iqn, P2, Optional.empty())).isEqualTo(LoginOutcome.LOGGED_IN);
      assertThat(iscsi.login(iqn, P1, Optional.empty())).isEqualTo(LoginOutcome.ALREADY_LOGGED_IN);
      step("login x2 (+1 idempotent)");
      assertThat(iscsi.sessions()).filteredOn(s -> s.target().equals(iqn))
          .extracting(IscsiSession::portal).containsExactlyInAnyOrder(P1, P2);
      for (Portal portal : List.of(P1, P2)) {
        assertThat(recordText(iqn, portal))
            .contains("node.startup = manual", "node.session.initial_login_retry_max = 0",
                "node.session.auth.authmethod = None",
                // open-iscsi's default is 120 s: a dead portal would stall writes that long.
                "node.session.timeo.replacement_timeout = 15",
                "node.conn[0].timeo.noop_out_interval = 5",
                "node.conn[0].timeo.noop_out_timeout = 10");
      }

      // One SCSI disk per session, both naming the same LUN: the WWID udev's scsi_id reads.
      ScsiDisk first = awaitDisk(iscsi.session(iqn, P1).orElseThrow());
      ScsiDisk second = awaitDisk(iscsi.session(iqn, P2).orElseThrow());
      step("disks");
      Wwid wwid = first.wwid().orElseThrow();
      assertThat(second.wwid()).contains(wwid);
      assertThat(second.device()).isNotEqualTo(first.device());
      assertThat(wwid.value())
          .isEqualTo(GuestIscsi.output(List.of("/lib/udev/scsi_id", "-g", "-u", "-d", first.device().toString())))
          .startsWith("36001405" + target.serial());
      assertThat(ScsiDisks.withWwid(wwid)).extracting(ScsiDisk::device)
          .containsExactlyInAnyOrder(first.device(), second.device());
      // A rescan (sysfs writes: the host's scan, each disk's rescan) finds the same LUN, nothing new.
      iscsi.rescan(iscsi.session(iqn, P1).orElseThrow());
      assertThat(iscsi.disks(iscsi.session(iqn, P1).orElseThrow())).extracting(ScsiDisk::wwid)
          .containsExactly(Optional.of(wwid));

      MultipathMap map = multipath.awaitMap(wwid, 2, WAIT);
      step("multipath map");
      assertThat(map.name()).isEqualTo(wwid.value());
      assertThat(map.paths()).extracting(MultipathPath::device)
          .containsExactlyInAnyOrder(first.device(), second.device());
      assertThat(multipath.maps()).extracting(MultipathMap::wwid).contains(wwid);

      assertThat(Filesystems.formatIfEmpty(map.device(), FsType.EXT4, List.of())).isEqualTo(FormatOutcome.FORMATTED);
      Path mnt = Files.createDirectory(dir.resolve("mnt"));
      Mounts.mount(map.device(), mnt, "ext4", EnumSet.noneOf(MountFlag.class), null);
      step("mkfs.ext4 + mount");
      try {
        byte[] before = pattern(1);
        writeAndSync(mnt.resolve("before"), before);

        assertThatThrownBy(() -> multipath.flush(wwid))
            .isInstanceOf(MapInUseException.class)
            .hasMessageContaining("mounted at " + mnt);

        // The portal of the first path goes dark (its traffic dropped, the target still up) while a
        // writer keeps appending fsynced records through the filesystem on the map.
        IscsiSession firstSession = iscsi.session(iqn, P1).orElseThrow();
        IscsiSession secondSession = iscsi.session(iqn, P2).orElseThrow();
        assertReplacementWithin(firstSession, iscsi.pathTimeouts());
        assertReplacementWithin(secondSession, iscsi.pathTimeouts());
        long written;
        try (RecordWriter writer = RecordWriter.start(mnt.resolve("records"))) {
          writer.awaitCompleted(5, WAIT, "the first records, both paths up");
          step("writer running (" + writer.completed() + " records)");
          try (PortalOutage outage = PortalOutage.drop(GuestIscsi.PORTAL_1)) {
            // The iSCSI ping finds the connection dead, the replacement timeout fails its queued
            // I/O up to dm-multipath, which retries it on the other path and fails this one.
            MultipathMap degraded = await(
                () -> multipath.map(wwid).filter(m -> stateOf(m, first).equals(Optional.of(PathState.FAILED))
                    && m.upPaths().stream().anyMatch(p -> p.device().equals(second.device()))),
                FAILOVER_WAIT,
                "multipathd to fail the path through " + P1 + " (" + first.device() + ") and keep "
                    + second.device() + " up, after dropping " + P1 + "'s traffic");
            step("portal down: path failed (" + writer.completed() + " records)");
            assertThat(degraded.upPaths()).extracting(MultipathPath::device).containsExactly(second.device());
            long atFailure = writer.completed();
            writer.awaitCompleted(atFailure + 10, WAIT,
                "10 more records through " + P2 + " while " + P1 + " is down (liveness, not speed)");
            step("writes continue through " + P2 + " (" + writer.completed() + " records)");
          }
          // The portal is back: iscsid logs in again on its own, and multipathd's checker
          // reinstates the path.
          MultipathMap back = await(
              () -> multipath.map(wwid).filter(m -> m.upPaths().size() == 2), FAILOVER_WAIT,
              "the path through " + P1 + " to be reinstated after its traffic flows again");
          step("portal back: path reinstated (" + writer.completed() + " records)");
          assertThat(back.upPaths()).extracting(MultipathPath::device)
              .containsExactlyInAnyOrder(first.device(), second.device());
          IscsiSession again = iscsi.session(iqn, P1).orElseThrow();
          assertThat(again.sid()).as("the same session, recovered, not a new login").isEqualTo(firstSession.sid());
          // After the re-login the session still gives up on a dead connection within our bound
          // (the guest run saw multipathd's 5 s, before and after), never open-iscsi's 120 s.
          assertReplacementWithin(again, iscsi.pathTimeouts());
          long atReturn = writer.completed();
          writer.awaitCompleted(atReturn + 5, WAIT, "5 more records with both paths up again");
          writer.close(); // it finishes the record in hand: from here on the count is final
          written = writer.completed();
        }
        // Read back from the device, not the page cache.
        Mounts.unmount(mnt);
        Mounts.mount(map.device(), mnt, "ext4", EnumSet.noneOf(MountFlag.class), null);
        RecordWriter.verify(mnt.resolve("records"), written);
        assertThat(Files.readAllBytes(mnt.resolve("before"))).isEqualTo(before);
        step("remount, " + written + " records intact");
      } finally {
        Mounts.unmount(mnt);
      }
      assertThat(Filesystems.formatIfEmpty(map.device(), FsType.EXT4, List.of())).isEqualTo(FormatOutcome.ALREADY_FORMATTED);

      // A block publish: the map's device node bound at a target, which no mount of the map shows.
      Path published = Files.createFile(dir.resolve("published"));
      Mounts.bind(map.device(), published, false);
      try {
        assertThatThrownBy(() -> multipath.flush(wwid))
            .isInstanceOf(MapInUseException.class)
            .hasMessageContaining("bound at " + published);
        assertThat(multipath.map(wwid)).isPresent();
      } finally {
        Mounts.unmount(published);
      }
      step("flush refused under a block publish");

      assertThat(multipath.flush(wwid)).isTrue();
      assertThat(multipath.map(wwid)).isEmpty();
      assertThat(multipath.flush(wwid)).isFalse();
      step("unmount + flush");

      assertThat(iscsi.logout(iqn, P1)).isTrue();
      assertThat(iscsi.logout(iqn, P2)).isTrue();
      assertThat(iscsi.logout(iqn, P1)).isFalse();
      assertThat(iscsi.sessions()).noneMatch(s -> s.target().equals(iqn));
      step("logout x2");
      await(() -> ScsiDisks.withWwid(wwid).isEmpty() ? Optional.of(true) : Optional.empty(), "the disks to go");
      step("disks gone");
      assertThat(iscsi.deleteNode(iqn, P1)).isTrue();
      assertThat(iscsi.deleteNode(iqn, P2)).isTrue();
      assertThat(iscsi.deleteNode(iqn, P1)).isFalse();
      assertThat(iscsi.nodes()).noneMatch(n -> n.target().equals(iqn));
    }
  }

  @Test
  void oneWayChapLogsInWithTheRightSecretOnlyAndKeepsItOffCommandLinesAndMessages() throws IOException {
    String secret = "s3cret-one-way-42";
    try (LioTarget target = LioTarget.create("chap", SIZE, dir, List.of(GuestIscsi.PORTAL_1))) {
      target.allow(iscsi.initiatorName(), "caravan", secret);
      String iqn = target.iqn();
      try {
        assertThatThrownBy(() -> iscsi.login(iqn, P1, Optional.of(Chap.oneWay("caravan", "wrong-secret-123"))))
            .isInstanceOfSatisfying(IscsiLoginException.class,
                e -> assertThat(e.reason()).isEqualTo(Reason.AUTHENTICATION_FAILED))
            .hasMessageNotContaining("wrong-secret-123");
        assertThatThrownBy(() -> iscsi.login(iqn, P1, Optional.empty()))
            .isInstanceOf(IscsiLoginException.class);
        assertThat(iscsi.session(iqn, P1)).isEmpty();

        assertThat(iscsi.login(iqn, P1, Optional.of(Chap.oneWay("caravan", secret))))
            .isEqualTo(LoginOutcome.LOGGED_IN);
        assertThat(iscsi.session(iqn, P1)).isPresent();
        Path record = recordFile(iqn, P1);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(record))).isEqualTo("rw-------");
        assertThat(Files.readString(record))
            .contains("node.session.auth.authmethod = CHAP", "node.session.auth.password = " + secret)
            .doesNotContain("wrong-secret-123");
      } finally {
        iscsi.logout(iqn, P1);
        iscsi.deleteNode(iqn, P1);
      }
    }
  }

  @Test
  void mutualChapAlsoChecksTheTarget() throws IOException {
    try (LioTarget target = LioTarget.create("mutual", SIZE, dir, List.of(GuestIscsi.PORTAL_1))) {
      target.allow(iscsi.initiatorName(), "caravan", "initiator-secret-1", "target", "target-secret-22");
      String iqn = target.iqn();
      try {
        assertThatThrownBy(() -> iscsi.login(iqn, P1,
                Optional.of(Chap.mutual("caravan", "initiator-secret-1", "target", "not-the-target-33"))))
            // The initiator, not the target, rejects here: iscsiadm calls that fatal (19).
            .isInstanceOfSatisfying(IscsiLoginException.class,
                e -> assertThat(e.reason()).isIn(Reason.AUTHENTICATION_FAILED, Reason.REFUSED))
            .hasMessageNotContaining("not-the-target-33")
            .hasMessageNotContaining("initiator-secret-1");
        step("mutual CHAP, wrong target secret");
        assertThat(iscsi.session(iqn, P1)).isEmpty();

        assertThat(iscsi.login(iqn, P1,
                Optional.of(Chap.mutual("caravan", "initiator-secret-1", "target", "target-secret-22"))))
            .isEqualTo(LoginOutcome.LOGGED_IN);
        assertThat(Files.readString(recordFile(iqn, P1)))
            .contains("node.session.auth.username_in = target", "node.session.auth.password_in = target-secret-22");
        assertThat(iscsi.logout(iqn, P1)).isTrue();
      } finally {
        iscsi.logout(iqn, P1);
        iscsi.deleteNode(iqn, P1);
      }
    }
  }

  @Test
  void aTargetWhoseAclLacksThisInitiatorRefusesIt() throws IOException {
    try (LioTarget target = LioTarget.create("acl", SIZE, dir, List.of(GuestIscsi.PORTAL_1))) {
      target.allow("iqn.2003-01.dev.caravan.test:someone-else");
      String iqn = target.iqn();
      try {
        assertThatThrownBy(() -> iscsi.login(iqn, P1, Optional.empty()))
            .isInstanceOfSatisfying(IscsiLoginException.class,
                e -> assertThat(e.reason()).isIn(Reason.REFUSED, Reason.AUTHENTICATION_FAILED));
        assertThat(iscsi.session(iqn, P1)).isEmpty();
      } finally {
        iscsi.deleteNode(iqn, P1);
      }
    }
  }

  /**
   * One host, two initiators: an interface record with its own initiator name logs in where the
   * target's ACL admits only that name, the host's own identity is refused there, and the kernel's
   * session says which name it logged in with. Logout and record deletion through the interface
   * leave nothing of it behind.
   */
  @Test
  void anInterfaceWithItsOwnInitiatorNameLogsInAsThatInitiator() throws IOException {
    String name = "caravan-guest-b";
    String second = "iqn.2003-01.dev.caravan.test:second-initiator";
    Iscsi b = iscsi.through(name);
    try (LioTarget target = LioTarget.create("iface", SIZE, dir, List.of(GuestIscsi.PORTAL_1))) {
      target.allow(second);
      String iqn = target.iqn();
      try {
        assertThat(iscsi.defineIface(name, second)).as("a new record").isTrue();
        assertThat(iscsi.defineIface(name, second)).as("the second time: nothing to change").isFalse();
        assertThat(b.initiatorName()).isEqualTo(second);
        assertThat(iscsi.initiatorName()).as("the host's own name stays").isNotEqualTo(second);
        step("iface record");

        assertThatThrownBy(() -> iscsi.login(iqn, P1, Optional.empty()))
            .as("the host's own identity is not in the ACL")
            .isInstanceOfSatisfying(IscsiLoginException.class,
                e -> assertThat(e.reason()).isIn(Reason.REFUSED, Reason.AUTHENTICATION_FAILED));
        iscsi.deleteNode(iqn, P1);
        assertThat(b.discover(P1)).as("discovery through the interface")
            .anyMatch(t -> t.target().equals(iqn));
        assertThat(b.login(iqn, P1, Optional.empty())).isEqualTo(LoginOutcome.LOGGED_IN);
        assertThat(b.login(iqn, P1, Optional.empty())).isEqualTo(LoginOutcome.ALREADY_LOGGED_IN);
        IscsiSession session = b.session(iqn, P1).orElseThrow();
        assertThat(session.iface()).isEqualTo(name);
        assertThat(b.initiatorName(session)).contains(second);
        assertThat(iscsi.session(iqn, P1)).as("system() sees every interface's sessions").contains(session);
        assertThat(iscsi.through("default").session(iqn, P1)).as("the default interface's look-up does not").isEmpty();
        assertThat(iscsi.through("default").initiatorName()).isEqualTo(iscsi.initiatorName());
        step("login through the iface");
        awaitDisk(session);

        assertThat(b.logout(iqn, P1)).isTrue();
        assertThat(b.session(iqn, P1)).isEmpty();
        assertThat(b.deleteNode(iqn, P1)).isTrue();
        assertThat(iscsi.nodes()).noneMatch(r -> r.target().equals(iqn));
        step("logout through the iface");
      } finally {
        b.logout(iqn, P1);
        b.deleteNode(iqn, P1);
        iscsi.deleteNode(iqn, P1);
        iscsi.deleteIface(name);
      }
      assertThat(Files.exists(Path.of("/etc/iscsi/ifaces", name))).as("the record is deleted").isFalse();
    }
  }

  // ---------------------------------------------------------------------------------------------

  private String recordText(String iqn, Portal portal) throws IOException {
    return Files.readString(recordFile(iqn, portal), StandardCharsets.UTF_8);
  }

  private Path recordFile(String iqn, Portal portal) {
    NodeRecord record = iscsi.nodes().stream()
        .filter(n -> n.target().equals(iqn) && n.portal().equals(portal))
        .findFirst().orElseThrow(() -> new AssertionError("no node record for " + iqn + " at " + portal));
    return NodeRecordFiles.fileOf(NodeRecordFiles.NODES, record);
  }

  /** What multipathd says of {@code disk}'s path in {@code map}. */
  private static Optional<PathState> stateOf(MultipathMap map, ScsiDisk disk) {
    return map.paths().stream().filter(p -> p.device().equals(disk.device())).map(MultipathPath::state).findFirst();
  }

  /**
   * The running session fails I/O upwards within the replacement timeout we asked for: the
   * kernel's {@code recovery_tmo}, which iscsid sets from the node record at each (re-)login and
   * multipathd may lower to its {@code fast_io_fail_tmo}.
   */
  private static void assertReplacementWithin(IscsiSession session, PathTimeouts timeouts) throws IOException {
    String value = Files.readString(Path.of("/sys/class/iscsi_session/session" + session.sid(), "recovery_tmo")).strip();
    System.out.printf("  session %d recovery_tmo %s s%n", session.sid(), value);
    assertThat(Integer.parseInt(value)).as("recovery_tmo of session %d", session.sid())
        .isBetween(1, (int) timeouts.replacementTimeout().toSeconds());
  }

  private ScsiDisk awaitDisk(IscsiSession session) {
    ScsiDisk disk = iscsi.awaitDisk(session, 0, WAIT);
    assertThat(iscsi.disks(session)).containsExactly(disk);
    return disk;
  }

  private static <T> T await(Supplier<Optional<T>> probe, String what) {
    return await(probe, WAIT, what);
  }

  private static <T> T await(Supplier<Optional<T>> probe, Duration wait, String what) {
    long deadline = System.nanoTime() + wait.toNanos();
    while (true) {
      Optional<T> value = probe.get();
      if (value.isPresent()) {
        return value.get();
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("waited " + wait + " for " + what);
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  private static byte[] pattern(long seed) {
    byte[] bytes = new byte[1 << 20];
    new Random(seed).nextBytes(bytes);
    return bytes;
  }

  private static void writeAndSync(Path file, byte[] content) throws IOException {
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ByteBuffer buffer = ByteBuffer.wrap(content);
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
      channel.force(true);
    }
  }
}

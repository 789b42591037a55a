package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.storage.block.ScsiDisk;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.fs.FormatOutcome;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.iscsi.SweepOutcome.Action;
import dev.caravan.storage.mount.MountFlag;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.multipath.MultipathMap;
import dev.caravan.storage.testing.GuestIscsi;
import dev.caravan.storage.testing.LioTarget;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The leaked-session sweeper against real sessions: a LIO target per case in the guest kernel,
 * open-iscsi and multipathd. Only the unused session in scope is logged out, and only once its
 * multipath map is no longer open; a mounted one, one the caller wants, one outside the scope and one
 * whose target the caller is busy with all stay. Runs in the guest only (skips elsewhere, saying
 * why).
 */
class SessionSweeperGuestTest {
  private static final long SIZE = 32L << 20;
  private static final Portal P1 = Portal.parse(GuestIscsi.PORTAL_1);
  private static final Portal P2 = Portal.parse(GuestIscsi.PORTAL_2);
  private static final Duration WAIT = Duration.ofSeconds(60);
  // Short, so the test sleeps little; a node uses minutes (the caller's window to cover).
  private static final Duration GRACE = Duration.ofSeconds(1);

  private final Iscsi iscsi = Iscsi.system().withTimeout(Duration.ofSeconds(60));
  private final Multipath multipath = Multipath.system();

  @TempDir Path dir;

  @BeforeEach
  void requireGuest() {
    GuestIscsi.assumeAvailable();
  }

  @Test
  void logsOutOnlyTheUnusedSessionInScopeAfterTwoSweepsAGracePeriodApart() throws Exception {
    List<LioTarget> targets = new ArrayList<>();
    List<Runnable> cleanups = new ArrayList<>();
    try {
      LioTarget leaked = target("leaked", GuestIscsi.PORTAL_1, targets);
      LioTarget mounted = target("mounted", GuestIscsi.PORTAL_1, targets);
      LioTarget wanted = target("wanted", GuestIscsi.PORTAL_1, targets);
      LioTarget busy = target("busy", GuestIscsi.PORTAL_1, targets);
      LioTarget outside = target("outside", GuestIscsi.PORTAL_2, targets);
      Map<LioTarget, Portal> portals = Map.of(leaked, P1, mounted, P1, wanted, P1, busy, P1, outside, P2);
      for (LioTarget t : targets) {
        Portal portal = portals.get(t);
        assertThat(iscsi.login(t.iqn(), portal, Optional.empty())).isEqualTo(LoginOutcome.LOGGED_IN);
        cleanups.add(() -> cleanUp(t.iqn(), portal));
      }
      Wwid leakedWwid = awaitMap(leaked, P1).wwid();
      MultipathMap mountedMap = awaitMap(mounted, P1);
      for (LioTarget t : List.of(wanted, busy, outside)) {
        awaitMap(t, portals.get(t));
      }

      assertThat(Filesystems.formatIfEmpty(mountedMap.device(), FsType.EXT4, List.of()))
          .isEqualTo(FormatOutcome.FORMATTED);
      Path mnt = Files.createDirectory(dir.resolve("mnt"));
      Mounts.mount(mountedMap.device(), mnt, "ext4", EnumSet.noneOf(MountFlag.class), null);
      cleanups.addFirst(() -> {
        if (MountTable.isMountPoint(mnt)) {
          Mounts.unmount(mnt);
        }
      });
      Files.writeString(mnt.resolve("data"), "kept", StandardCharsets.UTF_8);

      // Scope: this test's targets at portal 1 (a node gives its appliance's portals). The caller
      // wants one target, and is attaching through another whenever the sweeper asks to hold it.
      Set<String> ours = targets.stream().map(LioTarget::iqn).collect(Collectors.toSet());
      Predicate<IscsiSession> scope = s -> s.portal().equals(P1) && ours.contains(s.target());
      SessionClaims claims = new SessionClaims() {
        @Override
        public boolean wants(IscsiSession session) {
          return session.target().equals(wanted.iqn());
        }

        @Override
        public Optional<Hold> hold(IscsiSession session) {
          return session.target().equals(busy.iqn()) ? Optional.empty() : Optional.of(() -> {});
        }
      };
      SessionSweeper sweeper = new SessionSweeper(iscsi, multipath, GRACE);
      List<String> log = new ArrayList<>();
      Handler capture = new Handler() {
        @Override
        public void publish(LogRecord r) {
          synchronized (log) {
            log.add(java.text.MessageFormat.format(r.getMessage(), r.getParameters()));
          }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };
      Logger sweepLog = Logger.getLogger(SessionSweeper.class.getName()); // held: JUL keeps loggers weakly
      sweepLog.addHandler(capture);
      cleanups.add(() -> sweepLog.removeHandler(capture));

      Map<String, Action> first = byTarget(sweeper.sweep(scope, claims));
      assertThat(first).containsExactlyInAnyOrderEntriesOf(Map.of(
          leaked.iqn(), Action.UNUSED_WAITING, mounted.iqn(), Action.KEPT_IN_USE,
          wanted.iqn(), Action.KEPT_WANTED, busy.iqn(), Action.UNUSED_WAITING));
      assertThat(sessionTo(leaked, P1)).isPresent();

      // A second sweep a grace period later: the leaked session's map is open (a process reading
      // the raw device), so device-mapper refuses the flush and the session stays.
      Thread.sleep(GRACE.toMillis() + 100);
      List<SweepOutcome> second;
      try (FileChannel reader = FileChannel.open(Path.of("/dev/mapper", leakedWwid.value()), StandardOpenOption.READ)) {
        second = sweeper.sweep(scope, claims);
      }
      assertThat(byTarget(second)).containsEntry(leaked.iqn(), Action.FAILED)
          .containsEntry(busy.iqn(), Action.SKIPPED_BUSY)
          .containsEntry(mounted.iqn(), Action.KEPT_IN_USE)
          .containsEntry(wanted.iqn(), Action.KEPT_WANTED);
      assertThat(sessionTo(leaked, P1)).isPresent();
      assertThat(multipath.map(leakedWwid)).isPresent();
      int leakedSid = sessionTo(leaked, P1).orElseThrow().sid();

      // Closed again: the next sweep flushes the map and logs the session out. The busy one's grace
      // started again, so it waits.
      Map<String, Action> third = byTarget(sweeper.sweep(scope, claims));
      assertThat(third).containsEntry(leaked.iqn(), Action.LOGGED_OUT)
          .containsEntry(busy.iqn(), Action.UNUSED_WAITING)
          .containsEntry(mounted.iqn(), Action.KEPT_IN_USE)
          .containsEntry(wanted.iqn(), Action.KEPT_WANTED)
          .doesNotContainKey(outside.iqn());
      assertThat(sessionTo(leaked, P1)).isEmpty();
      assertThat(multipath.map(leakedWwid)).isEmpty();
      synchronized (log) {
        assertThat(log).anyMatch(l -> l.startsWith("iscsi sweeper: did not log out session " + leakedSid + " (target "
            + leaked.iqn() + " at " + P1 + ")"));
        assertThat(log).anyMatch(l -> l.startsWith("iscsi sweeper: flushed the unused multipath map " + leakedWwid));
        assertThat(log).anyMatch(l -> l.startsWith("iscsi sweeper: logged out session " + leakedSid + " (target "
            + leaked.iqn() + " at " + P1 + ")"));
      }

      // Everything else is as it was, the mounted filesystem included.
      for (LioTarget t : List.of(mounted, wanted, busy, outside)) {
        assertThat(sessionTo(t, portals.get(t))).as(t.iqn()).isPresent();
      }
      assertThat(Files.readString(mnt.resolve("data"), StandardCharsets.UTF_8)).isEqualTo("kept");
      // The sweeper left the node record alone: whoever made it decides.
      assertThat(iscsi.nodes()).anyMatch(n -> n.target().equals(leaked.iqn()));
    } finally {
      for (Runnable cleanup : cleanups) {
        cleanup.run();
      }
      for (LioTarget t : targets) {
        t.close();
      }
    }
  }

  // ---------------------------------------------------------------------------------------------

  private LioTarget target(String name, String portal, List<LioTarget> targets) throws IOException {
    LioTarget t = LioTarget.create(name, SIZE, dir, List.of(portal));
    targets.add(t);
    t.allow(iscsi.initiatorName());
    return t;
  }

  private Optional<IscsiSession> sessionTo(LioTarget t, Portal portal) {
    return iscsi.session(t.iqn(), portal);
  }

  private MultipathMap awaitMap(LioTarget t, Portal portal) {
    ScsiDisk disk = iscsi.awaitDisk(sessionTo(t, portal).orElseThrow(), 0, WAIT);
    return multipath.awaitMap(disk.wwid().orElseThrow(), 1, WAIT);
  }

  private static Map<String, Action> byTarget(List<SweepOutcome> outcomes) {
    System.out.println("  sweep: " + outcomes);
    return outcomes.stream().collect(Collectors.toMap(o -> o.session().target(), SweepOutcome::action));
  }

  /** Best effort: flush the map, log out, forget the record, so the next test starts clean. */
  private void cleanUp(String iqn, Portal portal) {
    try {
      Optional<IscsiSession> session = iscsi.session(iqn, portal);
      if (session.isPresent()) {
        for (ScsiDisk disk : iscsi.disks(session.get())) {
          disk.wwid().ifPresent(multipath::flush);
        }
        iscsi.logout(iqn, portal);
      }
      iscsi.deleteNode(iqn, portal);
    } catch (RuntimeException e) {
      System.out.println("  cleanup of " + iqn + " at " + portal + ": " + e.getMessage());
    }
  }
}

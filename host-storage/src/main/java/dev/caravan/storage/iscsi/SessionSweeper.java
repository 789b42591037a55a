package dev.caravan.storage.iscsi;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.ScsiDisk;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.iscsi.SweepDecisions.Decision;
import dev.caravan.storage.iscsi.SweepDecisions.Plan;
import dev.caravan.storage.iscsi.SweepDecisions.SessionKey;
import dev.caravan.storage.iscsi.SweepDecisions.Seen;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.multipath.MapInUseException;
import dev.caravan.storage.multipath.Multipath;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * Logs out iSCSI sessions that nobody uses any more: leaked by a crash between a login and the
 * record of it, or by a logout that failed. Logout only: no node record, LUN or data is removed.
 *
 * <p>A session is logged out only when all of these hold:
 *
 * <ol>
 *   <li>it is in the caller's scope (for example: to the portals of one appliance, to targets of
 *       names the caller creates); the sweeper does not even look at any other session, such as
 *       a node's iSCSI root disk or another driver's LUN;
 *   <li>the caller does not want it ({@link SessionClaims#wants});
 *   <li>nothing uses its disks: no mount of a disk, a partition or a multipath map over it, no
 *       bind mount of their device nodes, nothing stacked on them ({@code holders});
 *   <li>the same session (number, target and portal) was seen unused by an earlier sweep at least
 *       the grace period ago, and by every sweep since.
 * </ol>
 *
 * Right before the logout, under the caller's {@link SessionClaims#hold}, all of it is checked
 * again from a fresh look at the host; the multipath maps over its disks are then flushed
 * (multipathd's {@code del map}, which device-mapper refuses while the map is open), and the session
 * is logged out by its number. Each logout is logged, and every decision is returned for the caller
 * to count.
 */
public final class SessionSweeper {
  private static final System.Logger LOG = System.getLogger(SessionSweeper.class.getName());
  private static final Path SYS_BLOCK = Path.of("/sys/block");

  private final Iscsi iscsi;
  private final Multipath multipath;
  private final Duration grace;
  private final LongSupplier clock;
  private Map<SessionKey, Long> unusedSince = Map.of();

  SessionSweeper(Iscsi iscsi, Multipath multipath, Duration grace, LongSupplier clock) {
    this.iscsi = Objects.requireNonNull(iscsi, "iscsi");
    this.multipath = Objects.requireNonNull(multipath, "multipath");
    if (grace.isNegative() || grace.isZero()) {
      throw new IllegalArgumentException("grace must be positive: " + grace);
    }
    this.grace = grace;
    this.clock = clock;
  }

  /**
   * A sweeper that logs a session out once two sweeps at least {@code grace} apart have found it
   * unused. The grace must cover the caller's longest window between a login and the moment its
   * claims name the session.
   */
  public SessionSweeper(Iscsi iscsi, Multipath multipath, Duration grace) {
    this(iscsi, multipath, grace, System::nanoTime);
  }

  public Duration grace() {
    return grace;
  }

  /**
   * One sweep: looks at every session in {@code scope}, logs out those unused for the grace period,
   * and says what it did with each.
   */
  public synchronized List<SweepOutcome> sweep(Predicate<IscsiSession> scope, SessionClaims claims) {
    List<Seen> seen = new ArrayList<>();
    for (IscsiSession session : iscsi.sessions()) {
      if (!scope.test(session)) {
        seen.add(new Seen(session, false, false, List.of()));
      } else if (claims.wants(session)) {
        seen.add(new Seen(session, true, true, List.of()));
      } else {
        seen.add(new Seen(session, true, false, usage(session).users()));
      }
    }
    Plan plan = SweepDecisions.decide(unusedSince, seen, clock.getAsLong(), grace);
    Map<SessionKey, Long> remembered = new HashMap<>(plan.unusedSince());
    List<SweepOutcome> outcomes = new ArrayList<>();
    for (Decision d : plan.decisions()) {
      SweepOutcome outcome = switch (d.verdict()) {
        case OUT_OF_SCOPE -> null;
        case WANTED -> new SweepOutcome(d.session(), SweepOutcome.Action.KEPT_WANTED, d.detail());
        case IN_USE -> new SweepOutcome(d.session(), SweepOutcome.Action.KEPT_IN_USE, d.detail());
        case UNUSED_WAITING -> new SweepOutcome(d.session(), SweepOutcome.Action.UNUSED_WAITING, d.detail());
        case LOG_OUT -> logOut(d, scope, claims);
      };
      if (outcome == null) {
        continue;
      }
      if (outcome.action() != SweepOutcome.Action.FAILED
          && outcome.action() != SweepOutcome.Action.UNUSED_WAITING) {
        remembered.remove(SessionKey.of(d.session()));
      }
      outcomes.add(outcome);
    }
    unusedSince = Map.copyOf(remembered);
    return List.copyOf(outcomes);
  }

  /** Checks again under the caller's hold, flushes the idle maps, logs out. */
  private SweepOutcome logOut(Decision d, Predicate<IscsiSession> scope, SessionClaims claims) {
    IscsiSession session = d.session();
    Optional<SessionClaims.Hold> hold = claims.hold(session);
    if (hold.isEmpty()) {
      return new SweepOutcome(session, SweepOutcome.Action.SKIPPED_BUSY,
          "an attach or detach through its target is under way");
    }
    try (SessionClaims.Hold held = hold.get()) {
      boolean same = iscsi.sessions().stream()
          .anyMatch(s -> s.sid() == session.sid() && s.isTo(session.target(), session.portal()));
      if (!same) {
        return new SweepOutcome(session, SweepOutcome.Action.GONE, "ended before the logout");
      }
      if (!scope.test(session) || claims.wants(session)) {
        return new SweepOutcome(session, SweepOutcome.Action.KEPT_WANTED, "wanted by the time of the logout");
      }
      DiskUsage.Usage usage = usage(session);
      if (!usage.users().isEmpty()) {
        return new SweepOutcome(session, SweepOutcome.Action.KEPT_IN_USE, String.join(", ", usage.users()));
      }
      for (Wwid map : usage.idleMaps()) {
        multipath.flush(map); // refuses a map mounted, held or open since the look above
        LOG.log(System.Logger.Level.INFO, "iscsi sweeper: flushed the unused multipath map {0} over session {1}",
            map, describe(session));
      }
      if (!iscsi.logout(session)) {
        return new SweepOutcome(session, SweepOutcome.Action.GONE, "ended before the logout");
      }
      LOG.log(System.Logger.Level.INFO,
          "iscsi sweeper: logged out session {0}: no claim, mount or holder for {1}", describe(session), d.detail());
      return new SweepOutcome(session, SweepOutcome.Action.LOGGED_OUT, d.detail());
    } catch (MapInUseException e) {
      return new SweepOutcome(session, SweepOutcome.Action.KEPT_IN_USE, String.valueOf(e.getMessage()));
    } catch (StorageException e) {
      LOG.log(System.Logger.Level.WARNING, "iscsi sweeper: did not log out session {0}: {1}", describe(session),
          e.getMessage());
      return new SweepOutcome(session, SweepOutcome.Action.FAILED, String.valueOf(e.getMessage()));
    }
  }

  private DiskUsage.Usage usage(IscsiSession session) {
    List<String> disks = iscsi.disks(session).stream().map(ScsiDisk::name).toList();
    return new DiskUsage(SYS_BLOCK, MountTable.read()).of(disks);
  }

  private static String describe(IscsiSession s) {
    return s.sid() + " (target " + s.target() + " at " + s.portal() + ")";
  }
}

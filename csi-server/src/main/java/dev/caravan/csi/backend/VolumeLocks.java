package dev.caravan.csi.backend;

import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.exec.UnreapedTool;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Non-blocking per-key locks. The spec wants a second concurrent operation on the same volume to fail
 * fast with ABORTED rather than queue, and operations on different volumes never to wait for each
 * other. Keys are the backend's lock keys ({@code ControllerBackend#volumeLockKey}), which a name and
 * the id derived from it share, prefixed with the kind of object; they are human-readable ("volume
 * vol-db-3f2a9c0b1d4e") because they appear in the error.
 *
 * <p>An operation that ran a tool which was killed after its timeout but had not exited when the
 * runner gave up waiting ({@link ToolRunner#takeUnreaped}) leaves its keys held until that process is
 * gone: it may still be changing the volume. Calls for them meanwhile are ABORTED naming the process.
 */
public final class VolumeLocks {
  private static final System.Logger LOG = System.getLogger(VolumeLocks.class.getName());

  private final Set<String> held = ConcurrentHashMap.newKeySet();
  /** Keys whose operation has ended but left a tool running, and that tool. */
  private final Map<String, UnreapedTool> busy = new ConcurrentHashMap<>();
  /** The calling thread's tools killed but not reaped since it last asked. */
  private final Supplier<List<UnreapedTool>> unreaped;

  public VolumeLocks() {
    this(ToolRunner::takeUnreaped);
  }

  VolumeLocks(Supplier<List<UnreapedTool>> unreaped) {
    this.unreaped = unreaped;
  }

  /**
   * Takes every key or none. Throws ABORTED naming the first contended key.
   *
   * @return a handle that releases the keys when closed
   */
  public Held acquire(String... keys) {
    List<UnreapedTool> outsideAnyHold = unreaped.get();
    if (!outsideAnyHold.isEmpty()) { // run by this thread outside any hold: no volume's to answer for
      LOG.log(System.Logger.Level.WARNING, "killed tools still running, of no volume: {0}",
          outsideAnyHold.stream().map(UnreapedTool::describe).toList());
    }
    List<String> taken = new ArrayList<>(keys.length);
    for (String key : keys) {
      if (taken.contains(key)) {
        continue;
      }
      if (!held.add(key)) {
        taken.forEach(held::remove);
        UnreapedTool tool = busy.get(key);
        throw new CsiException(CsiException.Kind.ABORTED, tool == null
            ? "an operation for " + key + " is already pending"
            : key + " stays busy: " + tool.describe() + " was killed after its timeout and has not exited"
                + " (it waits in the kernel and may still change the volume); retry once it has");
      }
      taken.add(key);
    }
    return new Held(List.copyOf(taken));
  }

  /** Whether a key is currently held (for tests and diagnostics). */
  public boolean isHeld(String key) {
    return held.contains(key);
  }

  /** The keys of one successful {@link #acquire}. */
  public final class Held implements AutoCloseable {
    private final List<String> keys;

    private Held(List<String> keys) {
      this.keys = keys;
    }

    /** Releases the keys, or, if a tool the operation ran is still running, once it has exited. */
    @Override
    public void close() {
      List<UnreapedTool> running = unreaped.get().stream().filter(t -> !t.exited()).toList();
      if (running.isEmpty()) {
        keys.forEach(held::remove);
        return;
      }
      keys.forEach(k -> busy.put(k, running.getFirst()));
      LOG.log(System.Logger.Level.WARNING, "{0} stay busy until {1} exit(s)", keys,
          running.stream().map(UnreapedTool::describe).toList());
      // Nothing waits on the returned stage: it only releases the keys (exit never fails).
      var unused = CompletableFuture.allOf(running.stream().map(UnreapedTool::exit).toArray(CompletableFuture[]::new))
          .whenComplete((done, failed) -> keys.forEach(k -> {
            busy.remove(k);
            held.remove(k);
          }));
    }
  }

  /** The key of a volume, from the backend's lock key for it. */
  public static String volume(String lockKey) {
    return "volume " + lockKey;
  }

  /** The key of a snapshot, from the backend's lock key for it. */
  public static String snapshot(String lockKey) {
    return "snapshot " + lockKey;
  }
}

package dev.caravan.csi.observe.stats;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.node.NodeObserver;
import dev.caravan.csi.node.StagedVolume;
import dev.caravan.csi.observe.nomad.NomadPaths;
import dev.caravan.csi.observe.nomad.NomadPaths.NomadVolume;
import dev.caravan.csi.observe.stats.VolumeUsage.Walk;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsStats;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

/**
 * Measures every volume staged on this node, in the background and never on an RPC path: statvfs of
 * the staging mount every {@code statfsInterval}, and a walk of its tree (counting files,
 * directories and everything else) every {@code walkInterval}, at most {@code walkConcurrency} at a
 * time and each stopped after {@code walkTimeout} (then reported incomplete). The set of volumes is
 * rebuilt from the node journal and the mount table on every tick, so it survives plugin restarts.
 * A walk holds directories open, which would make the unmount of NodeUnstage fail with EBUSY: the
 * node engine calls {@link #releasing} first, which stops the walk and keeps new ones away for a
 * while.
 */
public final class UsageCollector implements NodeObserver, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(UsageCollector.class.getName());
  private static final Duration RELEASE_HOLD = Duration.ofSeconds(30);
  private static final Duration RELEASE_WAIT = Duration.ofSeconds(5);

  /** How often and how hard to measure. */
  public record Settings(
      Duration tick, Duration statfsInterval, Duration walkInterval, Duration walkTimeout, int walkConcurrency,
      Duration staleAfter) {
    public static Settings defaults() {
      return new Settings(Duration.ofSeconds(5), Duration.ofSeconds(30), Duration.ofMinutes(5), Duration.ofMinutes(2),
          2, Duration.ofMinutes(2));
    }

    public Settings {
      if (walkConcurrency < 1) {
        throw new IllegalArgumentException("walkConcurrency must be at least 1");
      }
    }
  }

  private static final class Entry {
    final String volumeId;
    volatile AccessType accessType = AccessType.MOUNT;
    volatile Optional<NomadVolume> nomad = Optional.empty();
    volatile Optional<Path> mountedAt = Optional.empty();
    volatile Optional<Path> device = Optional.empty();
    volatile Optional<FsStats> fs = Optional.empty();
    volatile Optional<Instant> statfsAt = Optional.empty();
    volatile long deviceBytes;
    volatile Optional<Walk> walk = Optional.empty();
    volatile Future<?> walking;
    volatile AtomicBoolean cancel = new AtomicBoolean();
    volatile Instant blockedUntil = Instant.MIN;
    volatile Optional<String> lastError = Optional.empty();
    volatile Optional<Instant> lastErrorAt = Optional.empty();

    Entry(String volumeId) {
      this.volumeId = volumeId;
    }
  }

  private final NodeJournal journal;
  private final Settings settings;
  private final Clock clock;
  private final Map<String, Entry> entries = new ConcurrentHashMap<>();
  private final ScheduledExecutorService ticker;
  private final ExecutorService walkers;
  private volatile java.util.concurrent.ScheduledFuture<?> schedule;

  public UsageCollector(NodeJournal journal, Settings settings, Clock clock) {
    this.journal = journal;
    this.settings = settings;
    this.clock = clock;
    this.ticker = Executors.newSingleThreadScheduledExecutor(daemon("caravan-usage"));
    this.walkers = Executors.newFixedThreadPool(settings.walkConcurrency(), daemon("caravan-usage-walk"));
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return Thread.ofPlatform().name(name + "-", 0).daemon(true).factory();
  }

  /** Starts the periodic measurement; the first tick runs at once. */
  public void start() {
    schedule = ticker.scheduleWithFixedDelay(this::tickQuietly, 0, settings.tick().toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Asks for a tick soon (e.g. a volume was asked for that is not measured yet). */
  public void requestSoon() {
    try {
      ticker.execute(this::tickQuietly);
    } catch (java.util.concurrent.RejectedExecutionException closed) {
      // shutting down
    }
  }

  private void tickQuietly() {
    try {
      tick();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "usage collection tick failed", e);
    }
  }

  /** One round: sync with the journal and mount table, statvfs what is due, start walks that are due. */
  synchronized void tick() {
    sync();
    Instant now = clock.instant();
    for (Entry e : entries.values()) {
      if (e.statfsAt.map(t -> !t.plus(settings.statfsInterval()).isAfter(now)).orElse(true)) {
        statfs(e);
      }
      boolean walkDue = e.walk.map(w -> !w.at().plus(settings.walkInterval()).isAfter(now)).orElse(true);
      if (walkDue) {
        startWalk(e);
      }
    }
  }

  /** Rebuilds the set of volumes from the journal and the mount table; no measurement. */
  public synchronized void sync() {
    Set<Path> mounted = MountTable.read().stream().map(MountEntry::mountPoint).collect(Collectors.toSet());
    Set<String> seen = new HashSet<>();
    for (StagedVolume v : journal.all()) {
      seen.add(v.volumeId());
      Entry e = entries.computeIfAbsent(v.volumeId(), Entry::new);
      e.accessType = v.accessType();
      e.device = v.device();
      e.nomad = v.stagingPaths().stream().map(NomadPaths::fromStagingPath).flatMap(Optional::stream).findFirst();
      Optional<Path> at = v.accessType() == AccessType.MOUNT
          ? v.stagingPaths().stream().filter(mounted::contains).findFirst()
          : Optional.empty();
      if (!at.equals(e.mountedAt)) {
        e.mountedAt = at;
        e.fs = Optional.empty();
        e.statfsAt = Optional.empty();
      }
    }
    for (Entry e : List.copyOf(entries.values())) {
      if (!seen.contains(e.volumeId)) {
        e.cancel.set(true);
        entries.remove(e.volumeId);
      }
    }
  }

  private void statfs(Entry e) {
    try {
      long deviceBytes = e.device.filter(Files::exists).map(BlockDevices::size).orElse(0L);
      if (e.accessType == AccessType.BLOCK) {
        e.deviceBytes = deviceBytes;
        e.statfsAt = Optional.of(clock.instant());
        return;
      }
      Optional<Path> at = e.mountedAt;
      if (at.isEmpty()) {
        return;
      }
      FsStats stats = Filesystems.stats(at.get());
      if (!MountTable.isMountPoint(at.get())) {
        return; // unmounted meanwhile: the figures would be the parent filesystem's
      }
      e.deviceBytes = deviceBytes;
      e.fs = Optional.of(stats);
      e.statfsAt = Optional.of(clock.instant());
    } catch (RuntimeException ex) {
      fail(e, "statfs: " + ex.getMessage());
    }
  }

  private void fail(Entry e, String message) {
    e.lastError = Optional.of(message);
    e.lastErrorAt = Optional.of(clock.instant());
  }

  private void startWalk(Entry e) {
    if (e.accessType != AccessType.MOUNT || e.mountedAt.isEmpty()) {
      return;
    }
    Future<?> running = e.walking;
    if (running != null && !running.isDone()) {
      return;
    }
    if (clock.instant().isBefore(e.blockedUntil)) {
      return;
    }
    Path root = e.mountedAt.get();
    AtomicBoolean cancel = new AtomicBoolean();
    e.cancel = cancel;
    e.walking = walkers.submit(() -> {
      try {
        Walk w = walk(root, cancel, settings.walkTimeout());
        if (!cancel.get() || !w.complete()) {
          e.walk = Optional.of(w);
        }
      } catch (IOException | RuntimeException ex) {
        fail(e, "walk: " + ex.getMessage());
      }
    });
  }

  /**
   * Counts what is under {@code root} without following symbolic links or leaving its filesystem;
   * stops at {@code timeout} or when {@code cancel} is set, and then says so.
   */
  Walk walk(Path root, AtomicBoolean cancel, Duration timeout) throws IOException {
    Instant at = clock.instant();
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    Object rootDev = Files.getAttribute(root, "unix:dev", LinkOption.NOFOLLOW_LINKS);
    long[] n = new long[5]; // files, dirs, others, bytes, errors
    String[] stop = {""};
    Set<Path> skipped = new HashSet<>();
    Files.walkFileTree(root, new SimpleFileVisitor<>() {
      private boolean stopping() {
        if (cancel.get()) {
          stop[0] = "cancelled (the volume was being unstaged)";
          return true;
        }
        if (System.nanoTime() - deadline > 0) {
          stop[0] = "stopped after " + timeout.toSeconds() + "s (walk timeout)";
          return true;
        }
        return false;
      }

      @Override
      public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
        if (stopping()) {
          return FileVisitResult.TERMINATE;
        }
        if (dir.equals(root)) {
          return FileVisitResult.CONTINUE;
        }
        n[1]++;
        if (!rootDev.equals(Files.getAttribute(dir, "unix:dev", LinkOption.NOFOLLOW_LINKS))) {
          skipped.add(dir);
          return FileVisitResult.SKIP_SUBTREE;
        }
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
        if (stopping()) {
          return FileVisitResult.TERMINATE;
        }
        if (attrs.isRegularFile()) {
          n[0]++;
          n[3] += attrs.size();
        } else if (attrs.isDirectory()) {
          n[1]++;
        } else {
          n[2]++;
        }
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult visitFileFailed(Path file, IOException exc) {
        n[4]++;
        return stopping() ? FileVisitResult.TERMINATE : FileVisitResult.CONTINUE;
      }
    });
    StringBuilder note = new StringBuilder(stop[0]);
    if (n[4] > 0) {
      note.append(note.isEmpty() ? "" : "; ").append(n[4]).append(" entries could not be read");
    }
    if (!skipped.isEmpty()) {
      note.append(note.isEmpty() ? "" : "; ").append("other filesystems mounted inside were not counted: ")
          .append(skipped.stream().sorted(Comparator.naturalOrder()).limit(5).toList());
    }
    return new Walk(n[0], n[1], n[2], n[3], at, Duration.ofNanos(System.nanoTime() - start),
        stop[0].isEmpty() && n[4] == 0, note.toString());
  }

  @Override
  public void releasing(String volumeId, Path stagingPath) {
    Entry e = entries.get(volumeId);
    if (e == null) {
      return;
    }
    e.blockedUntil = clock.instant().plus(RELEASE_HOLD);
    e.cancel.set(true);
    Future<?> running = e.walking;
    if (running != null) {
      try {
        running.get(RELEASE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      } catch (ExecutionException | TimeoutException | java.util.concurrent.CancellationException ignored) {
        // a failed or slow walk: the unmount's own EBUSY retry is the last word
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Measures one volume now (statvfs, and a full walk if {@code walk}), waiting for it; for tests
   * and tools. Empty if the volume is not staged here.
   */
  public Optional<VolumeUsage> measureNow(String volumeId, boolean walk) throws InterruptedException {
    Entry e;
    synchronized (this) {
      sync();
      e = entries.get(volumeId);
      if (e == null) {
        return Optional.empty();
      }
      statfs(e);
      if (walk) {
        e.blockedUntil = Instant.MIN;
        Future<?> running = e.walking;
        if (running == null || running.isDone()) {
          startWalk(e);
        }
      }
    }
    Future<?> w = e.walking;
    if (walk && w != null) {
      try {
        w.get();
      } catch (ExecutionException ex) {
        fail(e, "walk: " + ex.getCause());
      }
    }
    return get(volumeId);
  }

  /** The last measurement of one volume, without touching the disk. */
  public Optional<VolumeUsage> get(String volumeId) {
    return Optional.ofNullable(entries.get(volumeId)).filter(this::stillStaged).map(this::snapshot);
  }

  /** Every volume measured or to be measured; volumes unstaged since the last tick are left out. */
  public List<VolumeUsage> all() {
    return entries.values().stream().filter(this::stillStaged).map(this::snapshot)
        .sorted(Comparator.comparing(VolumeUsage::volumeId)).toList();
  }

  private boolean stillStaged(Entry e) {
    return journal.get(e.volumeId).isPresent();
  }

  private VolumeUsage snapshot(Entry e) {
    Instant now = clock.instant();
    boolean stale = e.statfsAt.map(t -> Duration.between(t, now).compareTo(settings.staleAfter()) > 0).orElse(false);
    Future<?> running = e.walking;
    return new VolumeUsage(e.volumeId, e.nomad, e.accessType, e.mountedAt, e.fs, e.statfsAt, e.deviceBytes, e.walk,
        running != null && !running.isDone(), stale, e.lastError, e.lastErrorAt);
  }

  public Settings settings() {
    return settings;
  }

  @Override
  public void close() {
    if (schedule != null) {
      schedule.cancel(false);
    }
    ticker.shutdownNow();
    entries.values().forEach(e -> e.cancel.set(true));
    walkers.shutdownNow();
    try {
      walkers.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

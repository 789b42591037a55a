package dev.caravan.csi.peer;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.peer.v1.NamesAnswer;
import dev.caravan.csi.peer.v1.NamesQuery;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * Whether this node, as the home of a volume name ({@link Coordinator}: rendezvous hashing over its
 * view, the sorted set of this node and its peers), may decide alone where a new volume of that name
 * goes, with no look at the other nodes.
 *
 * <p><b>Views.</b> A view's fingerprint is the SHA-256 of its sorted node ids; its generation counts
 * how often this node's fingerprint changed, kept across restarts in {@code view}. Every peer call
 * that places, surveys or lists names carries the sender's view; a receiver whose fingerprint
 * differs refuses it with UNAVAILABLE ({@link #DISAGREE}) and drops its own authority.
 *
 * <p><b>Authority.</b> A home is authoritative for view S once it has, under S, read every node's
 * volume names and name claims (the {@code Names} peer call, answered under the answering node's
 * create gate, so no create of an older view is still running there) and recorded a claim ({@link
 * NameClaims}) for every name it homes under S, on the node that holds it. From then on every volume of
 * a name it homes is made through it (every node of S sends the name to it, and an owner refuses a
 * create from a home of another view), so a name it has no claim for exists nowhere: it places it
 * among the nodes that answer, writes the claim and has the owner create, asking no other node. A home
 * that is not authoritative (at start, after a change of view, while a node of its view does not
 * answer) surveys every node for the name, as a plugin without homes does; one node down then blocks
 * the names of the homes still waiting for it, and no others. It keeps trying in the background until
 * every node answers.
 *
 * <p><b>Why two views never make one name twice.</b> To create a name, a home of view S needs an
 * answer from every node of S under S's fingerprint (its sync, or the survey), and the owner it sends
 * the create to must be on S as well. Take homes A (view S) and B (view T, T ≠ S) that both create N.
 * If B is in S and A in T, each read the other under its own view, so the later of those two reads
 * found the other already changed from the view it decided with: a change drops the changing node's
 * authority and raises its generation, which the homes that read it record and every later call
 * carries, so the earlier decider's authority ended before the later one read it (an owner also
 * refuses a create that names a generation it no longer has). The authority itself lives in memory
 * only: {@link #MARKER} shows it, and is removed at start. A durable marker would not be safe: let
 * home A (view {A,B,C}) be down while the others, its name taken out of their peer set, make the name
 * N that A homes on C, then take A back in; A would come back trusting its old reading, without N's
 * claim, and make N a second time. After a restart a home reads every node again before it decides
 * alone.
 *
 * <p><b>Limit.</b> A node that the other nodes take out of their peer set while it keeps running with
 * its old one, and keeps being sent creates, can still make, on itself or on another node taken out
 * with it, a name that the others made meanwhile, until it hears from any of them: no node can learn of
 * a change it is not told about. Take a node out of the peer set only when it is down.
 */
final class HomeAuthority implements AutoCloseable {
  /** The file, in the node's peer directory, that shows this node decides alone; its view's fingerprint. */
  static final String MARKER = "authority";
  /** The start of the refusal of a peer call from a node with another view. */
  static final String DISAGREE = "the nodes do not agree on the peer set yet";

  private static final System.Logger LOG = System.getLogger(HomeAuthority.class.getName());
  private static final Duration FIRST_RETRY = Duration.ofMillis(200);
  private static final Duration LAST_RETRY = Duration.ofSeconds(5);

  /** A view of the peer set: its nodes, fingerprint, and this node's generation. */
  record View(Set<String> nodes, String fingerprint, long generation) {
    dev.caravan.csi.peer.v1.View proto(String self) {
      return dev.caravan.csi.peer.v1.View.newBuilder().setFingerprint(fingerprint).setGeneration(generation)
          .setNode(self).build();
    }

    String home(String name) {
      return Coordinator.of(name, nodes);
    }
  }

  /** What a sync read: the view and each node's generation at that time. */
  private record Authority(String fingerprint, Map<String, Long> generations) {}

  private final String self;
  private final PeerClients clients;
  private final ControllerBackend backend;
  private final NameClaims claims;
  private final NameLocks locks;
  private final Path dir;
  /** Creates run under the read lock; a listing of names under the write lock (no create of an older view still runs). */
  private final ReentrantReadWriteLock gate = new ReentrantReadWriteLock();
  private final ScheduledExecutorService syncer;
  private final AtomicBoolean syncPending = new AtomicBoolean();
  private final Object viewLock = new Object();
  private String fingerprint;
  private long generation;
  private volatile Authority authority;
  private Duration retry = FIRST_RETRY;

  HomeAuthority(String self, PeerClients clients, ControllerBackend backend, NameClaims claims, NameLocks locks,
      Path dir) {
    this.self = self;
    this.clients = clients;
    this.backend = backend;
    this.claims = claims;
    this.locks = locks;
    this.dir = dir;
    StateFiles.delete(dir.resolve(MARKER));
    List<String> stored = StateFiles.read(dir.resolve("view")).map(s -> List.of(s.split("\n"))).orElse(List.of());
    this.fingerprint = stored.size() >= 2 ? stored.get(0) : "";
    this.generation = stored.size() >= 2 ? Long.parseLong(stored.get(1)) : 0;
    this.syncer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "caravan-home-sync");
      t.setDaemon(true);
      return t;
    });
  }

  /** Starts reading every node's names in the background. */
  void start() {
    requestSync(Duration.ZERO);
  }

  /** The current view; a change of it raises the generation (durably) and drops the authority. */
  View view() {
    Set<String> nodes = new TreeSet<>(clients.peers().current().keySet());
    nodes.add(self);
    String fp = fingerprint(nodes);
    synchronized (viewLock) {
      if (!fp.equals(fingerprint)) {
        fingerprint = fp;
        generation++;
        StateFiles.write(dir.resolve("view"), fp + "\n" + generation + "\n");
        drop("its peer set is now " + nodes);
      }
      return new View(Set.copyOf(nodes), fp, generation);
    }
  }

  static String fingerprint(Set<String> nodes) {
    try {
      MessageDigest d = MessageDigest.getInstance("SHA-256");
      d.update(String.join("\n", new TreeSet<>(nodes)).getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(d.digest()).substring(0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }

  /** Whether this node decides alone for the names it homes under {@code v}. */
  boolean authoritative(View v) {
    Authority a = authority;
    return a != null && a.fingerprint().equals(v.fingerprint());
  }

  /** The generation {@code node} had when this node last read it under its authority; 0 when none. */
  long generationOf(String node) {
    Authority a = authority;
    return a == null ? 0 : a.generations().getOrDefault(node, 0L);
  }

  /**
   * Refuses a call from a node with another view (UNAVAILABLE, {@link #DISAGREE}), and gives up this
   * node's authority then, or when the sender's generation is not the one this node read: the sender
   * changed its view since, and may have made names under the other one.
   */
  View check(dev.caravan.csi.peer.v1.View theirs) {
    View ours = view();
    if (!theirs.getFingerprint().equals(ours.fingerprint())) {
      drop("node " + theirs.getNode() + " has another view");
      throw new CsiException(CsiException.Kind.UNAVAILABLE, DISAGREE + ": node " + self + " has " + ours.nodes()
          + " (view " + ours.fingerprint() + "), node " + (theirs.getNode().isEmpty() ? "?" : theirs.getNode())
          + " has view " + (theirs.getFingerprint().isEmpty() ? "(none)" : theirs.getFingerprint()) + "; retry once"
          + " every node has the same peer set");
    }
    Authority a = authority;
    if (a != null) {
      Long read = a.generations().get(theirs.getNode());
      if (read != null && read != theirs.getGeneration()) {
        drop("node " + theirs.getNode() + " changed its view since this node read it");
      }
    }
    return ours;
  }

  /**
   * Runs an owner's create: refused when the home's view is not this node's, or when the home decided
   * with another generation of this node's view ({@code ownerGeneration}; 0 for none known: generations
   * start at 1). Runs
   * under the gate's read lock, so a listing of names under a newer view waits for it.
   */
  <R> R admitCreate(dev.caravan.csi.peer.v1.View home, long ownerGeneration, Supplier<R> create) {
    gate.readLock().lock();
    try {
      View ours = check(home);
      if (ownerGeneration > 0 && ownerGeneration != ours.generation()) {
        throw new CsiException(CsiException.Kind.UNAVAILABLE, DISAGREE + ": node " + self + " changed its peer set"
            + " (generation " + ours.generation() + ") since node " + home.getNode() + " read it (generation "
            + ownerGeneration + "); retry");
      }
      return create.get();
    } finally {
      gate.readLock().unlock();
    }
  }

  /** Runs a read of this node's names after every create already admitted has finished. */
  <R> R listing(Supplier<R> read) {
    gate.writeLock().lock();
    try {
      return read.get();
    } finally {
      gate.writeLock().unlock();
    }
  }

  /** This node's names and claims, for a home of the same view. */
  NamesAnswer names(dev.caravan.csi.peer.v1.View theirs) {
    View ours = check(theirs);
    return listing(() -> NamesAnswer.newBuilder().setNode(self).setGeneration(ours.generation())
        .putAllVolumes(backend.volumeNames()).putAllClaims(claims.all()).build());
  }

  /** Gives up deciding alone until every node has been read again. */
  void drop(String why) {
    if (authority != null) {
      LOG.log(System.Logger.Level.INFO, "node {0} no longer decides alone for the names it homes ({1}); reading"
          + " every node again", self, why);
    }
    authority = null;
    StateFiles.delete(dir.resolve(MARKER));
    requestSync(Duration.ZERO);
  }

  private void requestSync(Duration after) {
    if (syncPending.compareAndSet(false, true)) {
      try {
        // syncOnce catches what it throws and schedules its own retry: the future holds nothing to read.
        var unused = syncer.schedule(this::syncOnce, after.toMillis(), TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        syncPending.set(false); // closing
      }
    }
  }

  private void syncOnce() {
    syncPending.set(false);
    try {
      View v = view();
      if (authoritative(v)) {
        return;
      }
      sync(v);
      retry = FIRST_RETRY;
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.INFO, "node {0} cannot read every node's names yet ({1}); it surveys every"
          + " node for the names it homes until it can", self, e.getMessage());
      Duration next = retry;
      retry = retry.multipliedBy(2).compareTo(LAST_RETRY) > 0 ? LAST_RETRY : retry.multipliedBy(2);
      requestSync(next);
    }
  }

  /** Reads every node of {@code v}, records a claim for each name this node homes, and then decides alone. */
  private void sync(View v) {
    Map<String, Long> generations = new HashMap<>();
    Map<String, String> holders = new HashMap<>();
    Map<String, String> claimed = new HashMap<>();
    for (String node : v.nodes()) {
      NamesAnswer a = node.equals(self) ? names(v.proto(self)) : clients.client(node).call("Every node's names are"
          + " read before a home decides alone.", (stub, key) ->
          stub.names(NamesQuery.newBuilder().setIdempotencyKey(key).setView(v.proto(self)).build()));
      generations.put(node, a.getGeneration());
      a.getVolumesMap().keySet().stream().filter(n -> v.home(n).equals(self)).forEach(n -> {
        String was = holders.putIfAbsent(n, node);
        if (was != null && !was.equals(node)) {
          LOG.log(System.Logger.Level.WARNING, "the volume name {0} is held by node {1} and by node {2}; its claim"
              + " names {1}", n, was, node);
        }
      });
      a.getClaimsMap().forEach((n, owner) -> {
        if (v.home(n).equals(self)) {
          claimed.putIfAbsent(n, owner);
        }
      });
    }
    holders.forEach((name, node) -> underLock(name, () -> claims.claim(name, node)));
    // A create another home sent under an older view, and that never finished: its owner makes it.
    claimed.forEach((name, owner) -> {
      if (!holders.containsKey(name)) {
        underLock(name, () -> {
          if (claims.owner(name).isEmpty()) {
            claims.claim(name, owner);
          }
        });
      }
    });
    synchronized (viewLock) {
      View now = view();
      if (!now.fingerprint().equals(v.fingerprint()) || now.generation() != v.generation()) {
        throw new CsiException(CsiException.Kind.UNAVAILABLE, "the peer set changed while it was read");
      }
      authority = new Authority(v.fingerprint(), Map.copyOf(generations));
      StateFiles.write(dir.resolve(MARKER), v.fingerprint() + "\n");
    }
    LOG.log(System.Logger.Level.INFO, "node {0} decides alone for the names it homes among {1}", self, v.nodes());
  }

  private void underLock(String name, Runnable body) {
    ReentrantLock lock = locks.lock(name, self);
    try {
      body.run();
    } finally {
      lock.unlock();
    }
  }

  /** Whether {@code e} is another node's refusal for a different view. */
  static boolean disagreement(RuntimeException e) {
    String d = e instanceof CsiException c ? c.getMessage()
        : e instanceof io.grpc.StatusRuntimeException s ? s.getStatus().getDescription() : null;
    return Optional.ofNullable(d).filter(s -> s.startsWith(DISAGREE)).isPresent();
  }

  @Override
  public void close() {
    syncer.shutdownNow();
  }
}

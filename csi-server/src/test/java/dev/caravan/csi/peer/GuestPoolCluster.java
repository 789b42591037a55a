package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.storage.testing.HostRequirements;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Plugin instances as nodes of the {@code local} backend in the guest of {@code scripts/guest-suite},
 * each on a ZFS pool of its own ({@link GuestPools}), peers on loopback mTLS: one cluster for every
 * test of a class, to keep the guest's time down. Each test is skipped with the reason where there is
 * no ZFS, and must leave every pool as it found it (empty): what it made it deletes through the plugins.
 */
final class GuestPoolCluster implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {
  private final List<String> nodes;
  private final String what;
  private final BiFunction<String, Map<String, PeerAddress>, PeerSet> peerSets;
  private final Set<String> lost;
  private GuestPools pools;
  private PeerCluster cluster;

  /**
   * @param what what the tests check, for the reason they are skipped
   * @param peerSets each node's peer set, from its id and the other nodes' addresses
   */
  GuestPoolCluster(List<String> nodes, String what, BiFunction<String, Map<String, PeerAddress>, PeerSet> peerSets) {
    this(nodes, what, peerSets, Set.of());
  }

  private GuestPoolCluster(List<String> nodes, String what,
      BiFunction<String, Map<String, PeerAddress>, PeerSet> peerSets, Set<String> lost) {
    this.nodes = List.copyOf(nodes);
    this.what = what;
    this.peerSets = peerSets;
    this.lost = lost;
  }

  /**
   * Nodes whose peer sets leave out the nodes in {@link #lost()}, as discovery drops a node that is
   * gone: a test loses a node by adding it there.
   */
  static GuestPoolCluster withLostNodes(List<String> nodes, String what) {
    Set<String> lost = ConcurrentHashMap.newKeySet();
    return new GuestPoolCluster(nodes, what, PeerCluster.leavingOut(lost), lost);
  }

  /** The nodes the others' peer sets leave out ({@link #withLostNodes}); empty and unused otherwise. */
  Set<String> lost() {
    return lost;
  }

  GuestPools pools() {
    return pools;
  }

  PeerCluster cluster() {
    return cluster;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    if (HostRequirements.whyNoZfs().isPresent()) {
      return; // each test is skipped, with the reason, in beforeEach
    }
    pools = new GuestPools(nodes, 1L << 30);
    Map<String, Long> reserves = new LinkedHashMap<>();
    nodes.forEach(n -> reserves.put(n, 0L));
    cluster = PeerCluster.start(reserves, peerSets, pools);
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    try {
      if (cluster != null) {
        cluster.close();
      }
    } finally {
      if (pools != null) {
        pools.close();
      }
    }
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    Optional<String> why = HostRequirements.whyNoZfs();
    assumeTrue(why.isEmpty(), () -> what + " " + why.orElse(""));
  }

  @Override
  public void afterEach(ExtensionContext context) {
    if (cluster == null) {
      return;
    }
    for (String n : nodes) {
      assertThat(pools.objects(n)).as("what node %s's pool holds after the test", n).isEmpty();
    }
  }
}

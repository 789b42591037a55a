package dev.caravan.csi.peer;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.observe.nomad.NomadClient;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;

/**
 * The peer set as Nomad knows it: the registrations of a Nomad service (provider {@code nomad}) that
 * every plugin instance registers for its peer endpoint, read through the task API with the task's
 * workload identity. A registration names its node by a tag {@code caravan-node=<node id>} (the CSI
 * node id the plugin runs with), else by Nomad's node id. Cached for {@code ttl}; a failed refresh
 * keeps serving the last answer it had, and is UNAVAILABLE only when there never was one.
 */
public final class NomadPeers implements PeerSet {
  /** The tag a registration names its CSI node id with. */
  public static final String NODE_TAG = "caravan-node=";

  private static final System.Logger LOG = System.getLogger(NomadPeers.class.getName());

  private final NomadClient nomad;
  private final String namespace;
  private final String service;
  private final String self;
  private final Duration ttl;
  private final Clock clock;
  private Map<String, PeerAddress> cached;
  private Instant readAt = Instant.MIN;

  public NomadPeers(NomadClient nomad, String namespace, String service, String self, Duration ttl, Clock clock) {
    this.nomad = nomad;
    this.namespace = namespace;
    this.service = service;
    this.self = self;
    this.ttl = ttl;
    this.clock = clock;
  }

  @Override
  public String toString() {
    return "the registrations of Nomad service " + service + " in namespace " + namespace;
  }

  @Override
  public synchronized Map<String, PeerAddress> current() {
    Instant now = clock.instant();
    if (cached != null && now.isBefore(readAt.plus(ttl))) {
      return cached;
    }
    try {
      Map<String, PeerAddress> fresh = new TreeMap<>();
      for (NomadClient.ServiceRegistration r : nomad.readService(namespace, service)) {
        String node = r.tags().stream().filter(t -> t.startsWith(NODE_TAG)).map(t -> t.substring(NODE_TAG.length()))
            .findFirst().orElse(r.nodeId());
        if (!node.equals(self) && NodeNames.valid(node)) {
          fresh.put(node, new PeerAddress(r.address(), r.port()));
        }
      }
      cached = Map.copyOf(fresh);
      readAt = now;
      return cached;
    } catch (NomadClient.NomadException | IllegalArgumentException e) {
      if (cached != null) {
        LOG.log(System.Logger.Level.WARNING, "cannot refresh the peers from Nomad service {0} ({1}); still using the"
            + " last answer", service, e.getMessage());
        readAt = now; // not again at once: the next call would fail the same way
        return cached;
      }
      throw new CsiException(CsiException.Kind.UNAVAILABLE, "the peers cannot be read from Nomad service " + service
          + " in namespace " + namespace + ": " + e.getMessage() + ". The plugin's task needs its workload identity"
          + " (identity { file = true }) and an ACL policy granting namespace read-job");
    }
  }
}

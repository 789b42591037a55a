package dev.caravan.csi.peer;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One small ZFS pool per node, each on a sparse file of its own, so that every plugin instance of a
 * {@link PeerCluster} has a pool no other node can see: the multi-node {@code local} backend as on
 * separate machines. The {@code zpool}/{@code zfs} commands make the pools and serve as the oracle;
 * the plugins go through libzfs_core as always.
 */
final class GuestPools implements AutoCloseable, PeerCluster.Storage {
  static final String PARENT = "peers";

  private final Map<String, String> pools = new LinkedHashMap<>();
  private final List<Path> files = new ArrayList<>();

  /** A pool of {@code bytes} (a sparse file) for each node id. */
  GuestPools(List<String> nodes, long bytes) throws IOException {
    String run = Long.toString(ProcessHandle.current().pid(), 36);
    try {
      for (String node : nodes) {
        String pool = "cvp" + run + node;
        Path file = Files.createTempFile(pool + "-", ".vdev");
        files.add(file);
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
          f.setLength(bytes);
        }
        run("zpool", "create", "-f", pool, file.toString());
        pools.put(node, pool);
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  String pool(String node) {
    return pools.get(node);
  }

  /** The replica dataset of {@code volumeId} on {@code node}, by LocalReplication#replicaDataset's rule. */
  String replicaDataset(String node, String volumeId) {
    return pool(node) + "/" + PARENT + "/rep-" + dev.caravan.csi.backend.IdRules.nameHash(volumeId);
  }

  @Override
  public String driver() {
    return "local";
  }

  @Override
  public Map<String, String> options(PeerCluster.Node node) {
    return Map.of("pools", pool(node.id), "parent-dataset", PARENT);
  }

  /**
   * Minutes, not seconds: under the guest's emulated CPU a node's first mTLS handshake with a peer
   * alone took some 9 s on a loaded host.
   */
  @Override
  public Duration peerTimeout() {
    return Duration.ofMinutes(3);
  }

  /** Exports the node's pool, as a lost node's pool is gone from the others' sight. */
  void export(String node) {
    run("zpool", "export", "-f", pool(node));
  }

  /** Imports the node's pool again from its file. */
  void reimport(String node) {
    Path file = files.get(List.copyOf(pools.keySet()).indexOf(node));
    run("zpool", "import", "-d", file.toString(), pool(node));
  }

  /** The datasets and snapshots below the node's parent dataset, as {@code zfs list} names them. */
  List<String> objects(String node) {
    String out = run("zfs", "list", "-H", "-o", "name", "-t", "all", "-r", pool(node) + "/" + PARENT);
    List<String> names = new ArrayList<>(out.isEmpty() ? List.of() : List.of(out.split("\n")));
    names.remove(pool(node) + "/" + PARENT);
    return names;
  }

  /** {@code zfs get -Hp -o value PROPERTY DATASET} as a number. */
  static long numeric(String property, String dataset) {
    return Long.parseLong(run("zfs", "get", "-Hp", "-o", "value", property, dataset));
  }

  /** The pool's {@code available} bytes: what the local backend places by. */
  long available(String node) {
    return numeric("available", pool(node));
  }

  /** Output of a command; "" when {@code zfs list} finds nothing; an AssertionError when anything else fails. */
  static String run(String... command) {
    return dev.caravan.csi.testing.GuestCommands.run(command);
  }

  @Override
  public void close() throws IOException {
    for (String pool : pools.values()) {
      run("zpool", "destroy", "-f", pool);
    }
    pools.clear();
    for (Path f : files) {
      Files.deleteIfExists(f);
    }
  }
}

package dev.caravan.csi.peer;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * What replication between an owner node and one replica node should have done, by volume name: the
 * model that {@link ReplicationModelOnFileTest} checks a real two-node cluster against after every
 * step. A copy is known by the state of its source when the round that made it began; the invariant
 * it serves is that a replica never holds bytes its source never had.
 */
final class ReplicationModel {
  enum Op {
    /** CreateVolume on the owner, one replica, rounds only when the model starts them. */
    CREATE,
    STAGE,
    /** Appends {@code n} checksummed records through the staged filesystem, fsynced. */
    WRITE,
    UNSTAGE,
    /** One round of the owner's scheduler (the send, then the pruning), as its timer runs it. */
    ROUND,
    /** A send whose stream the test cuts after {@code n} bytes. */
    CUT,
    /** The replica's newest copy restored as a new volume on the replica node, and its records read. */
    RESTORE,
    /** CreateSnapshot number {@code n}: a user's snapshot, which replication never touches. */
    SNAPSHOT,
    DELETE_SNAPSHOT,
    /** ControllerExpandVolume by 8 MiB, while not staged. */
    EXPAND,
    /** The replica node's plugin stops: it does not answer until REPLICA_UP. */
    REPLICA_DOWN,
    REPLICA_UP,
    /** The owner's plugin restarts: a new scheduler, whose first round of each volume is at once. */
    RESTART_OWNER,
    DELETE
  }

  /**
   * One step on a volume name ({@code r0}, {@code r1}), never on an id, so that any subsequence of a
   * run is a run too: a step whose volume does not exist, or is not in the state it needs, does nothing.
   */
  record Step(Op op, String vol, long n) {
    @Override
    public String toString() {
      String s = op.name().toLowerCase(Locale.ROOT).replace('_', '-') + " " + vol;
      return switch (op) {
        case WRITE -> s + " " + n + " records";
        case CUT -> s + " after " + n + " bytes";
        case SNAPSHOT, DELETE_SNAPSHOT -> s + " #" + n;
        case REPLICA_DOWN, REPLICA_UP, RESTART_OWNER -> op.name().toLowerCase(Locale.ROOT).replace('_', '-');
        default -> s;
      };
    }

    String javaLiteral() {
      return "new ReplicationModel.Step(ReplicationModel.Op." + op + ", \"" + vol + "\", " + n + "L)";
    }

    static String describe(List<Step> steps) {
      StringBuilder s = new StringBuilder();
      for (int i = 0; i < steps.size(); i++) {
        s.append(String.format(Locale.ROOT, "  %3d. %s%n", i + 1, steps.get(i)));
      }
      return s.append("as Java:\n  List.of(\n").append(steps.stream().map(st -> "      " + st.javaLiteral())
          .collect(Collectors.joining(",\n"))).append(")\n").toString();
    }
  }

  /**
   * What a copy on the replica node must hold: its source as it stood when the round that made it
   * began (nothing writes a volume during a step).
   *
   * @param incarnation which volume of that name: a name deleted and created again is a new volume
   *     with the same id, and its records are not the old one's
   */
  record Copy(int incarnation, long records, long bytes, boolean formatted) {}

  static final class Vol {
    final String name;
    final String id;
    final int incarnation;
    long bytes;
    long records;
    boolean staged;
    boolean formatted;
    /** The copy on the replica node; null while it has none of this volume. */
    Copy copy;
    /** The user's snapshots by number, to their ids. */
    final Map<Long, String> snapshots = new TreeMap<>();

    Vol(String name, String id, int incarnation, long bytes) {
      this.name = name;
      this.id = id;
      this.incarnation = incarnation;
      this.bytes = bytes;
    }

    Copy now() {
      return new Copy(incarnation, records, bytes, formatted);
    }
  }

  final Map<String, Vol> volumes = new TreeMap<>();
  /** Volumes created so far by name: the incarnation of the next one. */
  final Map<String, Integer> incarnations = new TreeMap<>();
  boolean replicaUp = true;
  /**
   * Replicas kept on the replica node because it was down when their volume was deleted, by volume
   * id: they belong to no volume until the owner deletes them, or a round of a new volume of the same
   * id replaces them.
   */
  final Map<String, Copy> orphans = new TreeMap<>();

  /** Draws steps from a seed, weighted towards writes and rounds, each valid in the state it is drawn in. */
  static final class Generator {
    private final Random random;

    Generator(long seed) {
      this.random = new Random(seed);
    }

    Step next(ReplicationModel m) {
      String name = "r" + random.nextInt(2);
      Vol v = m.volumes.get(name);
      int roll = random.nextInt(100);
      if (roll < 6) {
        return new Step(m.replicaUp ? Op.REPLICA_DOWN : Op.REPLICA_UP, "", 0);
      }
      if (roll < 9) {
        return new Step(Op.RESTART_OWNER, "", 0);
      }
      if (v == null) {
        // CreateVolume needs every node (the name is claimed on each): bring n2 back first.
        return new Step(m.replicaUp ? Op.CREATE : Op.REPLICA_UP, name, 0);
      }
      if (roll < 30) {
        return v.staged ? new Step(Op.WRITE, name, 1 + random.nextInt(200)) : new Step(Op.STAGE, name, 0);
      }
      if (roll < 48) {
        return new Step(Op.ROUND, name, 0);
      }
      if (roll < 56) {
        long[] cuts = {0, 4096, 64 * 1024, 512 * 1024, 2L << 20, 16L << 20};
        return new Step(Op.CUT, name, cuts[random.nextInt(cuts.length)]);
      }
      if (roll < 64) {
        return new Step(v.staged ? Op.UNSTAGE : Op.STAGE, name, 0);
      }
      if (roll < 71) {
        return m.replicaUp ? new Step(Op.RESTORE, name, 0) : new Step(Op.REPLICA_UP, "", 0);
      }
      if (roll < 77) {
        return new Step(Op.SNAPSHOT, name, random.nextInt(2));
      }
      if (roll < 81) {
        return new Step(Op.DELETE_SNAPSHOT, name, random.nextInt(2));
      }
      if (roll < 86) {
        return v.staged ? new Step(Op.UNSTAGE, name, 0) : new Step(Op.EXPAND, name, 0);
      }
      if (roll < 89) {
        return new Step(Op.CREATE, name, 0); // again: CreateVolume is idempotent
      }
      return v.staged ? new Step(Op.UNSTAGE, name, 0) : new Step(Op.DELETE, name, 0);
    }
  }
}

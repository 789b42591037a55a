package dev.caravan.csi.scenario.model;

import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * One step of a model-based run ({@link ModelRunner}): an operation on symbolic names (volumes
 * {@code v0..}, snapshots {@code s0..}, targets by number), never on plugin ids, so that any
 * subsequence of a run is again a valid run (a step on a name nobody created is a call with an unknown
 * id, whose answer the spec names too). That is what lets a failing run shrink.
 *
 * @param op what the step does
 * @param vol the volume (or DHV volume) name the step is about
 * @param other the second name: the snapshot of SNAPSHOT, DELETE_SNAPSHOT and CREATE_FROM_SNAPSHOT, the
 *     source volume of CLONE
 * @param n a small number: the target of PUBLISH, UNPUBLISH and STATS, the access mode of CREATE (0
 *     single-node-writer, 1 single-node-multi-writer, 2 single-node-single-writer), how many records WRITE appends, the variant of BAD
 * @param flag block access for CREATE, read-only for PUBLISH, the wrong access type for STAGE
 * @param twice the call is made twice at once (a CO that lost track of it)
 * @param crash the crash point the plugin dies at during this step ("" for none): the plugin runs as a
 *     process of its own armed with it, and the CO's retry of the same call follows its death
 * @param encrypt {@code parameters.encryption=on} for CREATE, CREATE_FROM_SNAPSHOT and CLONE
 * @param secret the passphrase the step's secrets carry (CREATE, CREATE_FROM_SNAPSHOT, CLONE, STAGE and
 *     the NodeExpandVolume of EXPAND), by its role: a step never holds a passphrase itself, so neither
 *     its description nor its Java form can print one
 */
record ModelStep(Op op, String vol, String other, int n, boolean flag, boolean twice, String crash, boolean encrypt,
    Secret secret) {
  /** Which passphrase, if any, a step's secrets carry ({@link ModelDriver#passphrase} holds the two). */
  enum Secret {
    /** No {@code encryptionPassphrase} in the secrets. */
    NONE,
    /** The run's passphrase: every encrypted volume a run makes is keyed with it, unless a step said otherwise. */
    KEY,
    /** Another passphrase, as valid as the first: it opens nothing the run keyed with KEY. */
    OTHER_KEY;

    /** The other of the two passphrases; NONE stays NONE. */
    Secret other() {
      return this == KEY ? OTHER_KEY : this == OTHER_KEY ? KEY : NONE;
    }
  }

  enum Op {
    CREATE,
    CREATE_FROM_SNAPSHOT,
    CLONE,
    DELETE,
    SNAPSHOT,
    DELETE_SNAPSHOT,
    EXPAND,
    STAGE,
    PUBLISH,
    UNPUBLISH,
    UNSTAGE,
    WRITE,
    VERIFY,
    STATS,
    BAD,
    RESTART,
    DHV_CREATE,
    DHV_DELETE
  }

  static ModelStep of(Op op, String vol) {
    return new ModelStep(op, vol, "", 0, false, false, "", false, Secret.NONE);
  }

  ModelStep withOther(String o) {
    return new ModelStep(op, vol, o, n, flag, twice, crash, encrypt, secret);
  }

  ModelStep withN(int value) {
    return new ModelStep(op, vol, other, value, flag, twice, crash, encrypt, secret);
  }

  ModelStep withFlag(boolean value) {
    return new ModelStep(op, vol, other, n, value, twice, crash, encrypt, secret);
  }

  ModelStep madeTwice() {
    return new ModelStep(op, vol, other, n, flag, true, crash, encrypt, secret);
  }

  ModelStep crashingAt(String step) {
    return new ModelStep(op, vol, other, n, flag, twice, step, encrypt, secret);
  }

  ModelStep encrypted(boolean on) {
    return new ModelStep(op, vol, other, n, flag, twice, crash, on, secret);
  }

  ModelStep withSecret(Secret value) {
    return new ModelStep(op, vol, other, n, flag, twice, crash, encrypt, value);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder(op.name().toLowerCase(Locale.ROOT).replace('_', '-'));
    if (!vol.isEmpty()) {
      s.append(' ').append(vol);
    }
    if (!other.isEmpty()) {
      s.append(' ').append(other);
    }
    switch (op) {
      case CREATE -> s.append(flag ? " block" : " mount")
          .append(n == 1 ? " multi-writer" : n == 2 ? " single-node-single-writer" : " single-node-writer");
      case PUBLISH -> s.append(" t").append(n).append(flag ? " read-only" : " read-write");
      case UNPUBLISH, STATS -> s.append(" t").append(n);
      case WRITE -> s.append(' ').append(n).append(" records");
      case BAD -> s.append(" #").append(n);
      case STAGE -> s.append(flag ? " wrong-access-type" : "");
      default -> { }
    }
    if (encrypt) {
      s.append(" encryption=on");
    }
    if (secret != Secret.NONE) {
      s.append(secret == Secret.KEY ? " (passphrase: the run's)" : " (passphrase: the other one)");
    } else if (encrypt) {
      s.append(" (no passphrase)");
    }
    if (twice) {
      s.append(" (twice at once)");
    }
    if (!crash.isEmpty()) {
      s.append(" (plugin dies at ").append(crash).append(", then the retry)");
    }
    return s.toString();
  }

  /** The step as Java source, to paste into a named regression test. */
  String javaLiteral() {
    return "new ModelStep(ModelStep.Op." + op + ", \"" + vol + "\", \"" + other + "\", " + n + ", " + flag + ", "
        + twice + ", \"" + crash + "\", " + encrypt + ", ModelStep.Secret." + secret + ")";
  }

  /** A sequence as a numbered, readable list followed by its Java form. */
  static String describe(List<ModelStep> steps) {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < steps.size(); i++) {
      s.append(String.format(Locale.ROOT, "  %3d. %s%n", i + 1, steps.get(i)));
    }
    s.append("as Java:\n  List.of(\n").append(steps.stream().map(st -> "      " + st.javaLiteral())
        .collect(Collectors.joining(",\n"))).append(")\n");
    return s.toString();
  }
}

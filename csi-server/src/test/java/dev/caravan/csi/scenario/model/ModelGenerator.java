package dev.caravan.csi.scenario.model;

import dev.caravan.csi.scenario.KillConformance;
import dev.caravan.csi.scenario.TestBackend;
import dev.caravan.csi.scenario.model.ModelStep.Op;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Draws the next step from a seeded random source, mostly about what the model holds now (a publish
 * of a staged volume, a write through a writable target) and sometimes about anything (an unknown
 * name, a volume in the wrong state), so that both the happy paths and the spec's error rows are
 * walked. The same seed, budget and options always draw the same run.
 */
final class ModelGenerator {
  static final int VOLUMES = 6;
  static final int SNAPSHOTS = 4;
  static final int TARGETS = 3;

  /**
   * What a run may do beyond plain CSI calls: DHV operations (each starts the DHV plugin's JVM) and
   * kills at crash points (each starts a {@code caravan serve} process); under TCG both cost minutes.
   * And whether it makes encrypted volumes ({@link Encryption}); {@code whyNoEncryption} says why not,
   * when {@link Encryption#OFF}.
   */
  record Options(boolean dhv, boolean kills, Encryption encryption, String whyNoEncryption) {
    Options(boolean dhv, boolean kills, Encryption encryption) {
      this(dhv, kills, encryption, "");
    }
  }

  /**
   * Encrypted volumes in a run. ON: the backend encrypts on this host (local: ZFS native encryption;
   * file: LUKS2, where dm-crypt is usable), and a modest share of the volumes a run makes are
   * encrypted, with wrong and missing passphrases now and then. OFF: nothing encrypted is drawn (the
   * file backend without dm-crypt; qnap, whose encrypted volumes other suites prove), and the run's
   * output says why.
   */
  enum Encryption {
    ON,
    OFF
  }

  private final Random random;
  private final Options options;
  private final ModelState.Crypto crypto;
  /** Whether this run has drawn its first encrypted create, and its first stage with the wrong passphrase. */
  private boolean drewEncrypted;
  private boolean drewWrongStage;
  /** Stage draws this run gave to an encrypted volume before any other ({@link #FIRST_ENCRYPTED_STAGES}). */
  private int encryptedStages;
  /**
   * A run's first stage draws go to an encrypted volume while one is unstaged: the first of a volume
   * with a passphrase brings the other one, the next the right one. Without it a short run (local's 40
   * steps) would seldom stage the one encrypted volume it makes among several plain ones.
   */
  private static final int FIRST_ENCRYPTED_STAGES = 3;
  private final List<KillConformance.Case> crashPoints;
  /** Volumes grow no further than this: a few expansions each. */
  private final long largest;

  ModelGenerator(long seed, Options options, TestBackend backend) {
    this.random = new Random(seed);
    this.largest = 3 * backend.sizeFor("ext4");
    this.options = options;
    this.crypto = ModelState.Crypto.of(backend.driver(), options.encryption() == Encryption.ON);
    // The file backend's LUKS2 crash points are reached by its encrypted volumes, which a run with
    // encryption makes beside plain ones (KillConformance reaches them with an encrypted-only backend).
    // The model's CO keeps each volume's first passphrase: a rotating stage is the kill suites' alone.
    boolean luks = backend.driver().equals("file") && options.encryption() == Encryption.ON;
    this.crashPoints = KillConformance.MATRIX.stream()
        .filter(c -> c.where().reachedBy(backend) || (luks && c.where() == KillConformance.Where.FILE_LUKS))
        .filter(c -> c.operation() != KillConformance.Operation.ROTATE_STAGE).toList();
  }

  ModelStep next(ModelState m) {
    while (true) {
      ModelStep s = draw(m);
      if (s != null) {
        return s;
      }
    }
  }

  private ModelStep draw(ModelState m) {
    int r = random.nextInt(120);
    if (r < 12) {
      return maybeTwice(encrypted(ModelStep.of(Op.CREATE, anyVolume()).withFlag(random.nextInt(10) < 3)
          .withN(random.nextInt(10) < 4 ? ModelState.SOLE_WRITER
              : random.nextInt(3) == 0 ? ModelState.MULTI_WRITER : ModelState.SINGLE_WRITER)));
    } else if (r < 16) {
      String snap = snapshot(m);
      ModelState.Snap from = m.snapshots.get(snap);
      return copy(ModelStep.of(Op.CREATE_FROM_SNAPSHOT, anyVolume()).withOther(snap),
          from != null && from.encrypted(), from == null ? null : from.key());
    } else if (r < 20) {
      String v = volume(m);
      ModelState.Vol from = m.volumes.get(v);
      return copy(ModelStep.of(Op.CLONE, anyVolume()).withOther(v), from != null && from.encrypted,
          from == null ? null : from.key);
    } else if (r < 26) {
      return maybeTwice(ModelStep.of(Op.DELETE, volume(m)));
    } else if (r < 31) {
      return maybeTwice(ModelStep.of(Op.SNAPSHOT, volume(m)).withOther(anySnapshot()));
    } else if (r < 35) {
      return ModelStep.of(Op.DELETE_SNAPSHOT, "").withOther(snapshot(m));
    } else if (r < 39) {
      String v = volume(m);
      ModelState.Vol vol = m.volumes.get(v);
      return vol != null && vol.bytes > largest ? null : maybeTwice(ModelStep.of(Op.EXPAND, v).withSecret(secretFor(vol)));
    } else if (r < 52) {
      if (options.encryption() == Encryption.ON && encryptedStages < FIRST_ENCRYPTED_STAGES) {
        ModelState.Vol e = m.volumes.values().stream().filter(x -> x.encrypted && !x.staged).findFirst().orElse(null);
        if (e != null) {
          encryptedStages++;
          boolean wrong = !drewWrongStage && e.key != null;
          drewWrongStage |= wrong;
          return ModelStep.of(Op.STAGE, e.name).withSecret(wrong ? e.key.other() : ModelDriver.rightKey(e));
        }
      }
      String v = pick(m, x -> !x.staged);
      return maybeTwice(ModelStep.of(Op.STAGE, v).withFlag(random.nextInt(20) == 0).withSecret(secretFor(m.volumes.get(v))));
    } else if (r < 67) {
      return maybeTwice(ModelStep.of(Op.PUBLISH, pick(m, v -> v.staged)).withN(random.nextInt(TARGETS))
          .withFlag(random.nextInt(4) == 0));
    } else if (r < 77) {
      String v = pick(m, x -> !x.targets.isEmpty());
      ModelState.Vol vol = m.volumes.get(v);
      int t = vol != null && !vol.targets.isEmpty() && random.nextInt(4) != 0
          ? vol.targets.keySet().iterator().next() : random.nextInt(TARGETS);
      return maybeTwice(ModelStep.of(Op.UNPUBLISH, v).withN(t));
    } else if (r < 84) {
      return maybeTwice(ModelStep.of(Op.UNSTAGE, pick(m, v -> v.staged && v.targets.isEmpty())));
    } else if (r < 98) {
      return ModelStep.of(Op.WRITE, pick(m, ModelState.Vol::hasWritableTarget)).withN(1 + random.nextInt(8));
    } else if (r < 101) {
      return ModelStep.of(Op.VERIFY, volume(m));
    } else if (r < 104) {
      return stats(m);
    } else if (r < 111) {
      int variant = random.nextInt(ModelBadInput.VARIANTS);
      return ModelStep.of(Op.BAD, volume(m)).withN(variant);
    } else if (r < 113) {
      return ModelStep.of(Op.RESTART, "");
    } else if (r < 115) {
      if (!options.dhv()) {
        return null;
      }
      String name = "d" + random.nextInt(2);
      return ModelStep.of(m.dhv.contains(name) && random.nextBoolean() ? Op.DHV_DELETE : Op.DHV_CREATE, name);
    } else {
      return options.kills() && !crashPoints.isEmpty() ? kill(m) : null;
    }
  }

  /** A call the plugin dies in the middle of (if the state leads it to that crash point), then retried. */
  private ModelStep kill(ModelState m) {
    KillConformance.Case c = crashPoints.get(random.nextInt(crashPoints.size()));
    boolean block = c.access() == KillConformance.Access.BLOCK;
    // The crash points of encrypted volumes are reached only by them: the kill picks one when it can.
    boolean encrypted = c.access() == KillConformance.Access.ENCRYPTED || c.where() == KillConformance.Where.FILE_LUKS;
    java.util.function.Predicate<ModelState.Vol> kind = v -> v.block == block && (!encrypted || v.encrypted);
    ModelStep s = switch (c.operation()) {
      case STAGE -> {
        String v = pick(m, x -> !x.staged && kind.test(x));
        yield ModelStep.of(Op.STAGE, v).withSecret(ModelDriver.rightKey(m.volumes.get(v)));
      }
      case PUBLISH -> ModelStep.of(Op.PUBLISH, pick(m, v -> v.staged && kind.test(v))).withN(random.nextInt(TARGETS));
      case UNPUBLISH -> {
        String v = pick(m, x -> !x.targets.isEmpty() && kind.test(x));
        ModelState.Vol vol = m.volumes.get(v);
        yield ModelStep.of(Op.UNPUBLISH, v).withN(vol == null || vol.targets.isEmpty() ? 0
            : vol.targets.keySet().iterator().next());
      }
      case UNSTAGE -> ModelStep.of(Op.UNSTAGE, pick(m, v -> v.staged && v.targets.isEmpty() && kind.test(v)));
      case CREATE -> ModelStep.of(Op.CREATE, anyVolume()).withFlag(block).encrypted(encrypted)
          .withSecret(encrypted ? ModelStep.Secret.KEY : ModelStep.Secret.NONE);
      case DELETE -> ModelStep.of(Op.DELETE, pick(m, v -> !v.staged && !m.hasSnapshots(v.name)));
      case SNAPSHOT -> ModelStep.of(Op.SNAPSHOT, volume(m)).withOther(anySnapshot());
      case DELETE_SNAPSHOT -> ModelStep.of(Op.DELETE_SNAPSHOT, "").withOther(snapshot(m));
      case CLONE_FROM_VOLUME -> {
        String v = volume(m);
        ModelState.Vol from = m.volumes.get(v);
        yield sameEncryption(ModelStep.of(Op.CLONE, anyVolume()).withOther(v), from != null && from.encrypted,
            from == null ? null : from.key);
      }
      case CLONE_FROM_SNAPSHOT -> {
        String snap = snapshot(m);
        ModelState.Snap from = m.snapshots.get(snap);
        yield sameEncryption(ModelStep.of(Op.CREATE_FROM_SNAPSHOT, anyVolume()).withOther(snap),
            from != null && from.encrypted(), from == null ? null : from.key());
      }
      case ROTATE_STAGE -> throw new IllegalStateException("rotating stages are left out of crashPoints");
    };
    return s.crashingAt(c.step());
  }

  private ModelStep stats(ModelState m) {
    String v = pick(m, x -> x.staged);
    ModelState.Vol vol = m.volumes.get(v);
    if (vol == null) {
      return null;
    }
    List<Integer> paths = new ArrayList<>(vol.targets.keySet());
    if (!vol.block) {
      paths.add(-1);
    }
    if (paths.isEmpty()) {
      return null;
    }
    return ModelStep.of(Op.STATS, v).withN(paths.get(random.nextInt(paths.size())));
  }

  /**
   * A new volume, encrypted now and then: where the backend encrypts, a run's first create (so that a
   * short run covers encryption too) and then one in six (one in eight of those without the
   * passphrase); Nothing more is
   * drawn where encryption is OFF, so such a run draws what it drew before.
   */
  private ModelStep encrypted(ModelStep s) {
    return switch (options.encryption()) {
      case OFF -> s;
      case ON -> {
        if (!drewEncrypted) {
          drewEncrypted = true;
          yield s.encrypted(true).withSecret(ModelStep.Secret.KEY);
        }
        yield random.nextInt(6) != 0 ? s
            : s.encrypted(true).withSecret(random.nextInt(8) == 0 ? ModelStep.Secret.NONE : ModelStep.Secret.KEY);
      }
    };
  }

  /**
   * A copy of a source encrypted or not (and keyed with {@code key}): mostly asking for what the source
   * is, with the source's passphrase; now and then asking for the other encryption (INVALID_ARGUMENT),
   * bringing no passphrase, or, where the backend documents that CreateVolume checks it, another one.
   */
  private ModelStep copy(ModelStep s, boolean sourceEncrypted, ModelStep.Secret key) {
    if (options.encryption() != Encryption.ON) {
      return s;
    }
    ModelStep same = sameEncryption(s, sourceEncrypted, key);
    int r = random.nextInt(12);
    if (r == 0) {
      boolean on = !sourceEncrypted;
      return same.encrypted(on).withSecret(on ? ModelStep.Secret.KEY : ModelStep.Secret.NONE);
    } else if (r == 1 && sourceEncrypted) {
      return same.withSecret(ModelStep.Secret.NONE);
    } else if (r == 2 && sourceEncrypted && key != null && crypto.copyChecksKey()) {
      return same.withSecret(key.other());
    }
    return same;
  }

  private static ModelStep sameEncryption(ModelStep s, boolean sourceEncrypted, ModelStep.Secret key) {
    return sourceEncrypted ? s.encrypted(true).withSecret(key == null ? ModelStep.Secret.KEY : key) : s;
  }

  /**
   * The secrets of a stage or expand of {@code v}: none for a plain volume; for an encrypted one its
   * passphrase, and one time in eight another (when it has one to be wrong about) or none.
   */
  private ModelStep.Secret secretFor(ModelState.Vol v) {
    if (v == null || !v.encrypted) {
      return ModelStep.Secret.NONE;
    }
    int r = random.nextInt(16);
    if (r == 0 && v.key != null) {
      return v.key.other();
    } else if (r == 1) {
      return ModelStep.Secret.NONE;
    }
    return ModelDriver.rightKey(v);
  }

  private ModelStep maybeTwice(ModelStep s) {
    return random.nextInt(12) == 0 ? s.madeTwice() : s;
  }

  private String anyVolume() {
    return "v" + random.nextInt(VOLUMES);
  }

  private String anySnapshot() {
    return "s" + random.nextInt(SNAPSHOTS);
  }

  /** Mostly a volume the model holds; sometimes any name (unknown, or deleted). */
  private String volume(ModelState m) {
    return pick(m, v -> true);
  }

  private String pick(ModelState m, java.util.function.Predicate<ModelState.Vol> fits) {
    List<String> names = m.volumes.values().stream().filter(fits).map(v -> v.name).toList();
    if (names.isEmpty() || random.nextInt(10) == 0) {
      return anyVolume();
    }
    return names.get(random.nextInt(names.size()));
  }

  private String snapshot(ModelState m) {
    List<String> names = List.copyOf(m.snapshots.keySet());
    if (names.isEmpty() || random.nextInt(8) == 0) {
      return anySnapshot();
    }
    return names.get(random.nextInt(names.size()));
  }
}

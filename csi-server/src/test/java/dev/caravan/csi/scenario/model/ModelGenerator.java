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
   */
  record Options(boolean dhv, boolean kills) {}

  private final Random random;
  private final Options options;
  private final List<KillConformance.Case> crashPoints;
  /** Volumes grow no further than this: a few expansions each. */
  private final long largest;

  ModelGenerator(long seed, Options options, TestBackend backend) {
    this.random = new Random(seed);
    this.largest = 3 * backend.sizeFor("ext4");
    this.options = options;
    // The model's CO keeps each volume's first passphrase: a rotating stage is the kill suites' alone.
    this.crashPoints = KillConformance.MATRIX.stream().filter(c -> c.where().reachedBy(backend))
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
      return maybeTwice(ModelStep.of(Op.CREATE, anyVolume()).withFlag(random.nextInt(10) < 3)
          .withN(random.nextInt(10) < 4 ? ModelState.SOLE_WRITER
              : random.nextInt(3) == 0 ? ModelState.MULTI_WRITER : ModelState.SINGLE_WRITER));
    } else if (r < 16) {
      return ModelStep.of(Op.CREATE_FROM_SNAPSHOT, anyVolume()).withOther(snapshot(m));
    } else if (r < 20) {
      return ModelStep.of(Op.CLONE, anyVolume()).withOther(volume(m));
    } else if (r < 26) {
      return maybeTwice(ModelStep.of(Op.DELETE, volume(m)));
    } else if (r < 31) {
      return maybeTwice(ModelStep.of(Op.SNAPSHOT, volume(m)).withOther(anySnapshot()));
    } else if (r < 35) {
      return ModelStep.of(Op.DELETE_SNAPSHOT, "").withOther(snapshot(m));
    } else if (r < 39) {
      String v = volume(m);
      ModelState.Vol vol = m.volumes.get(v);
      return vol != null && vol.bytes > largest ? null : maybeTwice(ModelStep.of(Op.EXPAND, v));
    } else if (r < 52) {
      return maybeTwice(ModelStep.of(Op.STAGE, pick(m, v -> !v.staged)).withFlag(random.nextInt(20) == 0));
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
    ModelStep s = switch (c.operation()) {
      case STAGE -> ModelStep.of(Op.STAGE, pick(m, v -> !v.staged && v.block == block));
      case PUBLISH -> ModelStep.of(Op.PUBLISH, pick(m, v -> v.staged && v.block == block)).withN(random.nextInt(TARGETS));
      case UNPUBLISH -> {
        String v = pick(m, x -> !x.targets.isEmpty() && x.block == block);
        ModelState.Vol vol = m.volumes.get(v);
        yield ModelStep.of(Op.UNPUBLISH, v).withN(vol == null || vol.targets.isEmpty() ? 0
            : vol.targets.keySet().iterator().next());
      }
      case UNSTAGE -> ModelStep.of(Op.UNSTAGE, pick(m, v -> v.staged && v.targets.isEmpty() && v.block == block));
      case CREATE -> ModelStep.of(Op.CREATE, anyVolume()).withFlag(block);
      case DELETE -> ModelStep.of(Op.DELETE, pick(m, v -> !v.staged && !m.hasSnapshots(v.name)));
      case SNAPSHOT -> ModelStep.of(Op.SNAPSHOT, volume(m)).withOther(anySnapshot());
      case DELETE_SNAPSHOT -> ModelStep.of(Op.DELETE_SNAPSHOT, "").withOther(snapshot(m));
      case CLONE_FROM_VOLUME -> ModelStep.of(Op.CLONE, anyVolume()).withOther(volume(m));
      case CLONE_FROM_SNAPSHOT -> ModelStep.of(Op.CREATE_FROM_SNAPSHOT, anyVolume()).withOther(snapshot(m));
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

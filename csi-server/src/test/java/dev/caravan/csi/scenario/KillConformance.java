package dev.caravan.csi.scenario;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.peer.ReplicationKillOnFileTest;
import dev.caravan.csi.peer.ReplicationKillOnLocalTest;
import dev.caravan.csi.support.CrashPoints;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Kill at every step: for each crash point of stage, publish, unpublish, unstage, create, delete,
 * snapshot and clone, a plugin forked as its own process dies there for real ({@link CrashPoints}
 * halts it as SIGKILL would), a fresh plugin starts on the same data directory and node journal, the
 * CO's retry of the very same call finishes, the result is right (data written before the crash reads
 * back equal), and once everything is taken down through the CSI API nothing is left: no mount, loop
 * device, image, partial file, record, zvol or snapshot, no journal record; on qnap no LUN or target on
 * the appliance, no iSCSI session, node record or multipath map of the volume, no LIO target.
 *
 * <p>{@link #MATRIX} lists every step once or more; {@link #theMatrixCoversEveryCrashPointInTheSources}
 * fails when the sources reach a step the matrix lacks, so a new crash point cannot go untested; qnap's
 * controller steps are cased in {@link ControllerFailoverOnQnapTest} instead, killed on one controller
 * instance and retried on another.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class KillConformance {
  /** Where a crash point lives, hence which backends reach it. */
  public enum Where {
    /** Code every backend runs (the node engine, the services). */
    EVERY,
    FILE,
    /** The file backend's encrypted volumes (LUKS2 on the loop device): {@link TestBackend#fileEncrypted()}. */
    FILE_LUKS,
    LOCAL,
    QNAP;

    public boolean reachedBy(TestBackend backend) {
      if (this == FILE_LUKS) {
        return backend.driver().equals("file") && backend.encrypted();
      }
      return this == EVERY || name().equalsIgnoreCase(backend.driver());
    }
  }

  /** How the volumes of a case are accessed. */
  public enum Access {
    MOUNT,
    BLOCK,
    /** Mount access to volumes made with {@code encryption=on}, their passphrase in every call's secrets. */
    ENCRYPTED
  }

  /**
   * One operation a CO drives: what must exist before it ({@link #prepare}), the call that the crash
   * interrupts and that is then retried unchanged ({@link #call}), and what must hold once the retry
   * has answered OK ({@link #verify}).
   */
  public enum Operation {
    STAGE {
      @Override
      void prepare(KillScene s) {
        s.create("vol");
      }

      @Override
      void call(KillScene s) throws IOException {
        s.stage("vol");
      }

      @Override
      void verify(KillScene s) throws IOException {
        s.expectStaged("vol");
        s.publish("vol");
        s.expectPublished("vol");
        s.writePayload("vol");
        s.expectPayload("vol");
      }
    },
    PUBLISH {
      @Override
      void prepare(KillScene s) throws IOException {
        s.create("vol");
        s.stage("vol");
      }

      @Override
      void call(KillScene s) throws IOException {
        s.publish("vol");
      }

      @Override
      void verify(KillScene s) throws IOException {
        s.expectPublished("vol");
        s.writePayload("vol");
        s.expectPayload("vol");
      }
    },
    UNPUBLISH {
      @Override
      void prepare(KillScene s) throws IOException {
        s.create("vol");
        s.stage("vol");
        s.publish("vol");
        s.writePayload("vol");
      }

      @Override
      void call(KillScene s) throws IOException {
        s.unpublish("vol");
      }

      @Override
      void verify(KillScene s) throws IOException {
        s.expectNotPublished("vol");
        s.expectStaged("vol");
        s.publish("vol");
        s.expectPayload("vol");
      }
    },
    /**
     * A stage whose secrets rotate the passphrase (the volume made, formatted by a first stage and
     * unstaged under the first one); afterwards only the new one opens it.
     */
    ROTATE_STAGE {
      @Override
      void prepare(KillScene s) throws IOException {
        s.create("vol");
        s.stage("vol");
        s.unstage("vol");
        s.rotatePassphrase();
      }

      @Override
      void call(KillScene s) throws IOException {
        s.stage("vol");
      }

      @Override
      void verify(KillScene s) throws IOException {
        s.expectStaged("vol");
        s.publish("vol");
        s.writePayload("vol");
        s.unpublish("vol");
        s.unstage("vol");
        s.expectFirstPassphraseRefused("vol");
        s.stage("vol");
        s.publish("vol");
        s.expectPayload("vol");
      }
    },
    UNSTAGE {
      @Override
      void prepare(KillScene s) throws IOException {
        s.create("vol");
        s.stage("vol");
        s.publish("vol");
        s.writePayload("vol");
        s.unpublish("vol");
      }

      @Override
      void call(KillScene s) throws IOException {
        s.unstage("vol");
      }

      @Override
      void verify(KillScene s) throws IOException {
        s.expectNotStaged("vol");
        s.stage("vol");
        s.publish("vol");
        s.expectPayload("vol");
      }
    },
    CREATE {
      @Override
      void prepare(KillScene s) {}

      @Override
      void call(KillScene s) {
        s.create("vol");
      }

      @Override
      void verify(KillScene s) throws IOException {
        s.expectListed();
        s.stage("vol");
        s.publish("vol");
        s.writePayload("vol");
        s.expectPayload("vol");
      }
    },
    DELETE {
      @Override
      void prepare(KillScene s) {
        s.create("vol");
      }

      @Override
      void call(KillScene s) {
        s.delete("vol");
      }

      @Override
      void verify(KillScene s) {
        s.expectListed();
      }
    },
    SNAPSHOT {
      /** The source stays published, as a running job's volume is: the snapshot is taken of it in use. */
      @Override
      void prepare(KillScene s) throws IOException {
        s.create("vol");
        s.stage("vol");
        s.publish("vol");
        s.writePayload("vol");
      }

      @Override
      void call(KillScene s) {
        s.snapshot("snap", "vol");
      }

      @Override
      void verify(KillScene s) throws IOException {
        s.expectListed();
        s.cloneOfSnapshot("copy", "snap");
        s.stage("copy");
        s.publish("copy");
        s.expectPayload("copy");
      }
    },
    DELETE_SNAPSHOT {
      @Override
      void prepare(KillScene s) {
        s.create("vol");
        s.snapshot("snap", "vol");
      }

      @Override
      void call(KillScene s) {
        s.deleteSnapshot("snap");
      }

      @Override
      void verify(KillScene s) {
        s.expectListed();
      }
    },
    CLONE_FROM_VOLUME {
      @Override
      void prepare(KillScene s) throws IOException {
        s.create("vol");
        s.stage("vol");
        s.publish("vol");
        s.writePayload("vol");
      }

      @Override
      void call(KillScene s) {
        s.cloneOfVolume("clone", "vol");
      }

      @Override
      void verify(KillScene s) throws IOException {
        s.expectListed();
        s.stage("clone");
        s.publish("clone");
        s.expectPayload("clone");
      }
    },
    CLONE_FROM_SNAPSHOT {
      @Override
      void prepare(KillScene s) throws IOException {
        s.create("vol");
        s.stage("vol");
        s.publish("vol");
        s.writePayload("vol");
        s.snapshot("snap", "vol");
      }

      @Override
      void call(KillScene s) {
        s.cloneOfSnapshot("clone", "snap");
      }

      @Override
      void verify(KillScene s) throws IOException {
        s.expectListed();
        s.stage("clone");
        s.publish("clone");
        s.expectPayload("clone");
      }
    };

    abstract void prepare(KillScene s) throws IOException;

    abstract void call(KillScene s) throws IOException;

    abstract void verify(KillScene s) throws IOException;
  }

  /** A crash point, where it lives, and the operation (and access) that drives a plugin into it. */
  public record Case(String step, Where where, Operation operation, Access access) {
    @Override
    public String toString() {
      return step + " (" + operation.name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ')
          + (access == Access.BLOCK ? ", block" : access == Access.ENCRYPTED ? ", encrypted" : "") + ")";
    }
  }

  private static Case kill(String step, Where where, Operation operation) {
    return new Case(step, where, operation, Access.MOUNT);
  }

  private static Case killBlock(String step, Where where, Operation operation) {
    return new Case(step, where, operation, Access.BLOCK);
  }

  private static Case killEncrypted(String step, Where where, Operation operation) {
    return new Case(step, where, operation, Access.ENCRYPTED);
  }

  /**
   * Every crash point, in the order its operation reaches them. A step may be driven more than one
   * way (block access, a clone instead of a plain create); the first way listed is the one a backend
   * that runs only one case per step uses.
   */
  public static final List<Case> MATRIX = List.of(
      // stage: journal the intent, attach, format if empty, mount, journal the device
      kill("stage.after-journal", Where.EVERY, Operation.STAGE),
      killBlock("stage.after-journal", Where.EVERY, Operation.STAGE),
      kill("stage.after-attach", Where.EVERY, Operation.STAGE),
      killBlock("stage.after-attach", Where.EVERY, Operation.STAGE),
      kill("stage.after-format", Where.EVERY, Operation.STAGE),
      kill("stage.after-mount", Where.EVERY, Operation.STAGE),
      // publish: journal the target, create it, bind
      kill("publish.after-journal", Where.EVERY, Operation.PUBLISH),
      killBlock("publish.after-journal", Where.EVERY, Operation.PUBLISH),
      kill("publish.after-target", Where.EVERY, Operation.PUBLISH),
      killBlock("publish.after-target", Where.EVERY, Operation.PUBLISH),
      kill("publish.after-bind", Where.EVERY, Operation.PUBLISH),
      killBlock("publish.after-bind", Where.EVERY, Operation.PUBLISH),
      // unpublish: unmount, remove the target, forget it
      kill("unpublish.after-unmount", Where.EVERY, Operation.UNPUBLISH),
      killBlock("unpublish.after-unmount", Where.EVERY, Operation.UNPUBLISH),
      kill("unpublish.after-remove-target", Where.EVERY, Operation.UNPUBLISH),
      killBlock("unpublish.after-remove-target", Where.EVERY, Operation.UNPUBLISH),
      // unstage: unmount, detach, forget
      kill("unstage.after-unmount", Where.EVERY, Operation.UNSTAGE),
      kill("unstage.after-detach", Where.EVERY, Operation.UNSTAGE),
      killBlock("unstage.after-detach", Where.EVERY, Operation.UNSTAGE),
      // file: a record (CREATING) first, the data in <id>.img.partial, renamed, then READY
      kill("create.after-record", Where.FILE, Operation.CREATE),
      kill("create.after-record", Where.FILE, Operation.CLONE_FROM_VOLUME),
      kill("create.after-partial", Where.FILE, Operation.CREATE),
      kill("clone.after-partial", Where.FILE, Operation.CLONE_FROM_VOLUME),
      kill("clone.after-partial", Where.FILE, Operation.CLONE_FROM_SNAPSHOT),
      kill("create.after-rename", Where.FILE, Operation.CREATE),
      kill("create.after-rename", Where.FILE, Operation.CLONE_FROM_SNAPSHOT),
      kill("delete.after-mark", Where.FILE, Operation.DELETE),
      kill("delete.after-image-removed", Where.FILE, Operation.DELETE),
      kill("snapshot.after-record", Where.FILE, Operation.SNAPSHOT),
      kill("copy.while-frozen", Where.FILE, Operation.SNAPSHOT),
      kill("copy.while-frozen", Where.FILE, Operation.CLONE_FROM_VOLUME),
      kill("snapshot.after-partial", Where.FILE, Operation.SNAPSHOT),
      kill("snapshot.after-rename", Where.FILE, Operation.SNAPSHOT),
      kill("delete-snapshot.after-mark", Where.FILE, Operation.DELETE_SNAPSHOT),
      kill("delete-snapshot.after-image-removed", Where.FILE, Operation.DELETE_SNAPSHOT),
      // local: one lzc call per create, snapshot and delete; a clone of a volume copies a temporary snapshot
      kill("create.after-zvol", Where.LOCAL, Operation.CREATE),
      kill("clone.after-temp-snapshot", Where.LOCAL, Operation.CLONE_FROM_VOLUME),
      kill("clone.after-copy", Where.LOCAL, Operation.CLONE_FROM_VOLUME),
      kill("clone.after-receive", Where.LOCAL, Operation.CLONE_FROM_SNAPSHOT),
      kill("snapshot.after-zfs-snapshot", Where.LOCAL, Operation.SNAPSHOT),
      kill("delete.after-destroy", Where.LOCAL, Operation.DELETE),
      // local, encrypted: the key is loaded before the device is formatted and mounted, unloaded after the unmount
      killEncrypted("local.stage.after-load-key", Where.LOCAL, Operation.STAGE),
      killEncrypted("local.unstage.before-unload-key", Where.LOCAL, Operation.UNSTAGE),
      // local, encrypted, rotating: the key loaded with the previous passphrase before it is changed
      killEncrypted("local.stage.after-load-previous-key", Where.LOCAL, Operation.ROTATE_STAGE),
      // qnap: sessions logged in on every portal before the multipath map is awaited; the map flushed before logout
      kill("qnap.attach.after-login", Where.QNAP, Operation.STAGE),
      // file, encrypted: LUKS2 written on the empty loop device before the mapping opens; the mapping
      // closed before the loop device is detached
      kill("stage.after-luks-format", Where.FILE_LUKS, Operation.STAGE),
      kill("unstage.after-luks-close", Where.FILE_LUKS, Operation.UNSTAGE),
      // file, encrypted, rotating: the new passphrase's key slot added before the previous one's is destroyed
      kill("stage.after-luks-add-slot", Where.FILE_LUKS, Operation.ROTATE_STAGE),
      kill("qnap.detach.after-flush", Where.QNAP, Operation.UNSTAGE),
      // qnap, encrypted: LUKS2 written on the empty multipath map before the mapping opens; the mapping
      // closed before the map is flushed and the sessions logged out
      killEncrypted("qnap.attach.after-luks-format", Where.QNAP, Operation.STAGE),
      killEncrypted("qnap.detach.after-luks-close", Where.QNAP, Operation.UNSTAGE),
      // qnap, encrypted, rotating: the new passphrase's key slot added on the map before the previous one's is destroyed
      killEncrypted("qnap.attach.after-luks-add-slot", Where.QNAP, Operation.ROTATE_STAGE));

  /** How long the interrupted call, and then the process's death, may take (minutes under TCG). */
  private static final long CALL_SECONDS = 600;

  private PluginFixture f;
  private ForkedPlugin forked;

  abstract TestBackend backend();

  /**
   * Whether this backend runs the steps every backend shares ({@link Where#EVERY}: the node engine and
   * the services), and every way each step is driven. A backend where forking a JVM is expensive runs
   * only its own steps, each the first way listed: the shared steps run the same code on every backend,
   * and the file backend's run proves them every way.
   */
  boolean sharedStepsEveryWay() {
    return true;
  }

  Stream<Case> cases() {
    TestBackend backend = backend();
    if (sharedStepsEveryWay()) {
      return MATRIX.stream().filter(c -> c.where().reachedBy(backend));
    }
    Map<String, Case> first = new LinkedHashMap<>();
    MATRIX.stream().filter(c -> c.where() != Where.EVERY && c.where().reachedBy(backend))
        .forEach(c -> first.putIfAbsent(c.step(), c));
    return first.values().stream();
  }

  @AfterEach
  void cleanUp() throws IOException, InterruptedException {
    if (forked != null) {
      forked.close();
      forked = null;
    }
    if (f != null) {
      f.close();
      f = null;
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void aKilledCallIsFinishedByItsRetryAndLeavesNothing(Case c) throws Exception {
    f = PluginFixture.unstarted(backend());
    KillScene scene = new KillScene(f, c.access() == Access.BLOCK, c.access() == Access.ENCRYPTED, c.step().hashCode());
    f.startPlugin();
    c.operation().prepare(scene);
    f.stopPlugin();

    forked = ForkedPlugin.start(f, c.step());
    f.connect();
    f.controller = f.controller.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS);
    f.node = f.node.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS);
    expectDeathAt(c.step(), () -> c.operation().call(scene));
    f.disconnect();

    f.startPlugin(); // in this JVM, on the same data directory and journal
    c.operation().call(scene);
    c.operation().verify(scene);
    scene.tearDown();
    scene.expectNothingLeft();
  }

  /** The call fails because its plugin died, and it died at {@code step}: not elsewhere, not of something else. */
  private void expectDeathAt(String step, Call call) throws InterruptedException {
    Status status;
    try {
      call.run();
      throw new AssertionError("crash point " + step + " was never reached: the call succeeded\n" + forked.log());
    } catch (StatusRuntimeException e) {
      status = e.getStatus();
    } catch (IOException e) {
      throw new AssertionError("crash point " + step + " was never reached: " + e, e);
    }
    OptionalInt exit = forked.exitStatus(status.getCode() == Status.Code.UNAVAILABLE ? CALL_SECONDS : 5);
    assertThat(exit).as("crash point %s was never reached: the call answered %s and the plugin still runs\n%s",
        step, status, forked.log()).isPresent();
    assertThat(exit.getAsInt()).as("exit status of the plugin killed at %s\n%s", step, forked.log())
        .isEqualTo(CrashPoints.EXIT_STATUS);
    assertThat(forked.log()).contains("crash point " + step + " reached");
    assertThat(status.getCode()).as("what the CO sees of a plugin that died").isEqualTo(Status.Code.UNAVAILABLE);
  }

  @FunctionalInterface
  private interface Call {
    void run() throws IOException;
  }

  @Test
  void theMatrixCoversEveryCrashPointInTheSources() throws IOException {
    Map<String, Set<Where>> inSources = new TreeMap<>();
    CrashPointSources.scan().forEach((step, files) ->
        inSources.put(step, files.stream().map(file -> where(step, file)).collect(Collectors.toCollection(TreeSet::new))));
    Map<String, Set<Where>> inMatrix = MATRIX.stream().collect(Collectors.groupingBy(
        Case::step, TreeMap::new, Collectors.mapping(Case::where, Collectors.toCollection(TreeSet::new))));
    // qnap's controller steps die on one controller instance and are retried on another, on the host.
    ControllerFailoverOnQnapTest.STEPS.forEach(step -> inMatrix.computeIfAbsent(step, k -> new TreeSet<>()).add(Where.QNAP));
    // Replication's steps die on one of two peer nodes, and the next round is checked, on the host.
    ReplicationKillOnFileTest.STEPS.forEach(step -> inMatrix.computeIfAbsent(step, k -> new TreeSet<>()).add(Where.FILE));
    ReplicationKillOnLocalTest.STEPS.forEach(step -> inMatrix.computeIfAbsent(step, k -> new TreeSet<>()).add(Where.LOCAL));
    assertThat(inMatrix).as("crash points in MATRIX (left) and in the main sources (right)").isEqualTo(inSources);
  }

  /** Which backends reach crash point {@code step} in {@code file} (a path below the source root). */
  private static Where where(String step, String file) {
    if (file.startsWith("dev/caravan/csi/backend/file/") && step.contains(".after-luks-")) {
      return Where.FILE_LUKS;
    }
    if (file.startsWith("dev/caravan/csi/backend/file/")) {
      return Where.FILE;
    }
    if (file.startsWith("dev/caravan/csi/backend/local/")) {
      return Where.LOCAL;
    }
    if (file.startsWith("dev/caravan/csi/backend/qnap/")) {
      return Where.QNAP;
    }
    if (file.startsWith("dev/caravan/csi/backend/") && file.indexOf('/', "dev/caravan/csi/backend/".length()) > 0) {
      throw new AssertionError("a crash point in " + file + ", a backend this suite has no kill test for");
    }
    return Where.EVERY;
  }
}

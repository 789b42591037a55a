package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.ProbeRequest;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Probe on the {@code local} backend while ZFS cannot read a pool's status: a pool's disk stalls
 * ({@link FaultyPool}) under an operation that holds ZFS's pool namespace lock while it waits for
 * the disk, so that the plugin's read of the pool status blocks in its ioctl. Probe answers within
 * Nomad's 5 s all the same, not ready, naming the pool whose read is stuck.
 */
class ProbeStallOnLocalTest {
  /** Nomad's deadline for Probe (nomad-csi.md §11). */
  private static final long PROBE_SECONDS = 5;
  /**
   * A Probe that comes while the read is stuck past its 4 s answers at once, not after another 4 s:
   * under that, with room for the guest's emulated CPU on a loaded host (a Probe took 2.1 s so).
   */
  private static final Duration AT_ONCE = Duration.ofMillis(3500);

  private FaultyPool pool;
  private PluginFixture f;
  private CompletableFuture<String> holder;

  @AfterEach
  void tearDown() throws Exception {
    try {
      if (pool != null) {
        pool.recover(); // a test that failed mid-stall
      }
      if (holder != null) {
        holder.get(60, TimeUnit.SECONDS);
      }
      if (f != null) {
        f.close();
      }
    } finally {
      if (pool != null) {
        pool.close();
      }
    }
  }

  @Test
  void probeAnswersWithinItsBoundNamingThePoolWhoseStatusReadIsStuck() throws Exception {
    TestBackend.local().assumeAvailable();
    pool = FaultyPool.create(256 * MIB);
    f = PluginFixture.start(TestBackend.local(pool.name));
    // The first call of a cold JVM loads gRPC's classes, which takes the guest longer than a Probe's deadline.
    assertThat(f.identity.withDeadlineAfter(120, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance())
        .getReady().getValue()).as("Probe before the stall").isTrue();

    pool.stall();
    holder = pool.holdNamespaceLock();
    // The first Probe whose read waits behind the lock answers not ready after the 4 s bound; before
    // the reguid holds the lock, Probes still read the pool ONLINE.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    StatusRuntimeException notReady = null;
    while (notReady == null) {
      assertThat(System.nanoTime()).as("a not-ready Probe within 60 s of the stall").isLessThan(deadline);
      assertThat(holder).as("zpool reguid waits for the stalled disk").isNotDone();
      try {
        probe();
        Thread.sleep(200);
      } catch (StatusRuntimeException e) {
        notReady = e;
      }
    }
    String stuck = "the status of ZFS pool " + pool.name + " did not answer within 4 s";
    assertThat(notReady.getStatus().getCode()).as("Probe while the pool status read is stuck: %s", notReady)
        .isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(notReady.getStatus().getDescription()).contains(stuck)
        .contains("last answer").contains(pool.name + "=ONLINE");

    for (int i = 0; i < 3; i++) {
      long start = System.nanoTime();
      StatusRuntimeException again = error(this::probe);
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      assertThat(again.getStatus().getCode()).as("Probe %s while the read stays stuck", i)
          .isEqualTo(Code.FAILED_PRECONDITION);
      assertThat(again.getStatus().getDescription()).contains(stuck);
      assertThat(took).as("Probe %s while the read stays stuck answers at once", i).isLessThan(AT_ONCE);
    }

    pool.recover();
    holder.get(60, TimeUnit.SECONDS);
    holder = null;
    long back = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      try {
        assertThat(probe().getReady().getValue()).isTrue();
        break;
      } catch (StatusRuntimeException e) {
        assertThat(System.nanoTime()).as("Probe ready again once the disk is back: %s", e).isLessThan(back);
        Thread.sleep(200);
      }
    }
  }

  private dev.caravan.csi.v1.ProbeResponse probe() {
    return f.identity.withDeadlineAfter(PROBE_SECONDS, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance());
  }
}

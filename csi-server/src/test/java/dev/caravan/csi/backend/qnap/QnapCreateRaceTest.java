package dev.caravan.csi.backend.qnap;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.qnap.QnapSimulator.Flavour;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/**
 * Two controller instances (two backends, each with its own session, as two plugin processes have)
 * racing CreateVolume for the same names against one appliance: the appliance, not a lock in one
 * process, decides which LUN is the volume, and every name ends with exactly one LUN, which both
 * callers return.
 */
class QnapCreateRaceTest {
  private static final Map<String, String> ENV =
      Map.of(Credentials.ENV_USER, QnapSimulator.USER, Credentials.ENV_PASSWORD, QnapSimulator.PASSWORD);
  private static final int NAMES = 12;

  private static QnapBackend open(QnapSimulator sim, String node) {
    return QnapBackend.open(new BackendConfig(node, Path.of("/nonexistent"), Map.of("url", sim.url().toString(),
        "portals", "192.0.2.10", "transport", "cgi", "ready-timeout-seconds", "20"), NodeUsage.none()), ENV);
  }

  /** CreateVolume as a CO sends it: retried, after a short wait, while the answer is a retryable one. */
  private static VolumeInfo create(QnapBackend b, String name) throws InterruptedException {
    VolumeRequest req = new VolumeRequest(name, new CapacityRange(1L << 30, 0), Set.of(AccessType.MOUNT),
        Optional.of("ext4"), Map.of(), Optional.empty(), List.of(), List.of());
    for (int attempt = 1; ; attempt++) {
      try {
        return b.controller().createVolume(req);
      } catch (CsiException e) {
        boolean retryable = e.kind() == CsiException.Kind.ABORTED || e.kind() == CsiException.Kind.UNAVAILABLE;
        if (!retryable || attempt == 20) {
          throw e;
        }
        Thread.sleep(ThreadLocalRandom.current().nextInt(5, 50));
      }
    }
  }

  @Test
  void twoControllersCreatingOneNameMakeOneLun() throws Exception {
    try (QnapSimulator sim = QnapSimulator.start(Flavour.QTS); QnapBackend one = open(sim, "controller-1");
        QnapBackend two = open(sim, "controller-2");
        ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<VolumeInfo>> first = new ArrayList<>();
      List<Future<VolumeInfo>> second = new ArrayList<>();
      for (int i = 0; i < NAMES; i++) {
        String name = "raced-" + i;
        CyclicBarrier together = new CyclicBarrier(2);
        first.add(pool.submit(() -> {
          together.await();
          return create(one, name);
        }));
        second.add(pool.submit(() -> {
          together.await();
          return create(two, name);
        }));
      }
      for (int i = 0; i < NAMES; i++) {
        VolumeInfo a = first.get(i).get();
        VolumeInfo b = second.get(i).get();
        assertThat(b.id()).isEqualTo(a.id());
        assertThat(b.context()).as("the same LUN: its NAA and LUN number").isEqualTo(a.context());
      }
      sim.finishCreating();
      List<String> luns = new ArrayList<>(sim.lunNames().values());
      assertThat(luns).as("one LUN per name, none left over").hasSize(NAMES).doesNotHaveDuplicates();
      for (int i = 0; i < NAMES; i++) {
        VolumeInfo v = first.get(i).get();
        assertThat(one.controller().findVolume(v.id())).as("the volume both returned exists")
            .hasValueSatisfying(f -> assertThat(f.context().get("naa")).isEqualTo(v.context().get("naa")));
      }
      assertThat(sim.targetNames().values()).hasSize(NAMES).doesNotHaveDuplicates();
    }
  }
}

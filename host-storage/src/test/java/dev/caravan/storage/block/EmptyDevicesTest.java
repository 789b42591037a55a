package dev.caravan.storage.block;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FormatOutcome;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** One device wanted by a filesystem and a LUKS2 header at once: one of them is written, once. */
class EmptyDevicesTest {
  private static final long SIZE = 64L << 20;
  private static final byte[] PASSPHRASE = "correct horse battery".getBytes(StandardCharsets.UTF_8);
  private static final KeySlotCost CHEAPEST = new KeySlotCost(Duration.ofMillis(1), 32, 1);

  @RegisterExtension final Scratch scratch = new Scratch();

  @Test
  void ext4AndLuks2FormatsOfOneEmptyDeviceAtOnceWriteOneOfThemAndRefuseTheOther() throws Exception {
    HostRequirements.assumeRootWithLoopDevices();
    HostRequirements.assumeTool("mkfs.ext4", "e2fsprogs");
    for (int round = 0; round < 3; round++) {
      LoopDevice loop = LoopDevices.attach(scratch.image("disk-" + round + ".img", SIZE), false);
      List<String> outcomes = new ArrayList<>();
      try (ExecutorService pool = Executors.newFixedThreadPool(4)) {
        CyclicBarrier start = new CyclicBarrier(4);
        List<Future<String>> calls = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
          Callable<String> format =
              i % 2 == 0
                  ? () -> Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of()) == FormatOutcome.FORMATTED
                      ? "ext4" : "found ext4"
                  : () -> Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST) == Luks2.FormatOutcome.FORMATTED
                      ? "LUKS2" : "found LUKS2";
          calls.add(pool.submit(() -> {
            start.await();
            try {
              return format.call();
            } catch (DataPresentException e) {
              return "refused: " + e.found();
            }
          }));
        }
        for (Future<String> call : calls) {
          try {
            outcomes.add(call.get());
          } catch (ExecutionException e) {
            throw new AssertionError("a format failed otherwise than refusing", e.getCause());
          }
        }
        Signature on = Probe.probe(loop.device());
        String written = on.type().orElse("nothing").equals("ext4") ? "ext4" : "LUKS2";
        String other = written.equals("ext4") ? "LUKS2" : "ext4";
        // What a caller of the other format is told the device holds.
        String seen = written.equals("ext4") ? "ext4 filesystem" : "crypto_LUKS";
        assertThat(on.type().orElse("nothing")).as("round %d: %s", round, outcomes).isIn("ext4", "crypto_LUKS");
        // Exactly one caller wrote, the one whose format is on the device; the others found it there.
        assertThat(outcomes).as("round %d", round).containsOnlyOnce(written)
            .doesNotContain(other, "found " + other)
            .allMatch(o -> o.equals(written) || o.equals("found " + written) || o.equals("refused: " + seen));
      } finally {
        LoopDevices.detach(loop);
      }
    }
    assertThat(DeviceLocks.held()).isZero();
  }
}

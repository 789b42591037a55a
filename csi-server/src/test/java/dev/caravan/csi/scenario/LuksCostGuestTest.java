package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What encryption costs, measured in the guest and printed (run it alone with --select-class; the
 * guest suite does not select it): NodeStageVolume and NodeUnstageVolume of an encrypted file volume
 * against a plain one through the socket, and opening and closing a LUKS2 mapping in process against
 * {@code cryptsetup open} and {@code close} (the passphrase on its standard input), the same stage and
 * unstage on qnap (real LIO targets, iSCSI logins and multipath maps behind the simulator), and sequential
 * write throughput through a mapping against the plain loop device. Each stage, unstage, open and
 * close figure is the median of {@value #ROUNDS} rounds; every round checks that the mapping or
 * staging really came and went.
 */
class LuksCostGuestTest {
  private static final int ROUNDS = 5;
  private static final String PASSPHRASE = "cost-measurement-passphrase";
  private static final byte[] KEY = PASSPHRASE.getBytes(StandardCharsets.UTF_8);
  private static final int WRITE_MIB = 128;
  private static final int THROUGHPUT_ROUNDS = 3;

  @Test
  void stageAndUnstageEncryptedAgainstPlain() throws IOException {
    HostRequirements.assumeDmCrypt();
    for (boolean encrypted : new boolean[] {false, true}) {
      // What an operator gets: the default key costs, not the tests' least.
      try (PluginFixture f = PluginFixture.start(encrypted ? TestBackend.fileEncrypted() : TestBackend.file(),
          s -> s.withKeyCosts(KeyCosts.DEFAULT))) {
        VolumeCapability cap = Caps.mount("ext4");
        CreateVolumeRequest.Builder create = CreateVolumeRequest.newBuilder().setName("cost")
            .addVolumeCapabilities(cap).setCapacityRange(Caps.bytes(64 * MIB)).putSecrets("encryptionPassphrase", PASSPHRASE);
        if (encrypted) {
          create.putParameters("encryption", "on");
        }
        Volume v = f.controller.createVolume(create.build()).getVolume();
        Path staging = f.dir("staging/cost");
        NodeStageVolumeRequest stage = NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
            .putAllVolumeContext(v.getVolumeContextMap()).setStagingTargetPath(staging.toString())
            .setVolumeCapability(cap).putSecrets("encryptionPassphrase", PASSPHRASE).build();
        NodeUnstageVolumeRequest unstage = NodeUnstageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
            .setStagingTargetPath(staging.toString()).build();
        timeRounds(encrypted ? "encrypted" : "plain", () -> f.node.nodeStageVolume(stage),
            () -> assertThat(dev.caravan.storage.mount.MountTable.isMountPoint(staging)).isTrue(),
            () -> f.node.nodeUnstageVolume(unstage), () -> assertThat(f.ourLoops()).isEmpty());
      }
    }
  }

  @Test
  void qnapStageAndUnstageEncryptedAgainstPlain() throws IOException {
    HostRequirements.assumeDmCrypt();
    VolumeCapability cap = Caps.mount("ext4");
    // What an operator gets: the default key costs, not the tests' least.
    try (PluginFixture f = PluginFixture.start(TestBackend.qnapOnLio(), s -> s.withKeyCosts(KeyCosts.DEFAULT))) {
      for (boolean encrypted : new boolean[] {false, true}) {
        String name = encrypted ? "cost-encrypted" : "cost-plain";
        CreateVolumeRequest.Builder create = CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
            .setCapacityRange(Caps.bytes(1L << 30));
        if (encrypted) {
          create.putParameters("encryption", "on").putSecrets("encryptionPassphrase", PASSPHRASE);
        }
        Volume v = f.controller.createVolume(create.build()).getVolume();
        f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
            .setNodeId(f.backend.nodeId()).setVolumeCapability(cap).build());
        String mapping = Luks2.mappingName("caravan-qnap:3" + v.getVolumeContextMap().get("naa"));
        Path staging = f.dir("staging/" + name);
        Map<String, String> secrets = encrypted ? Map.of("encryptionPassphrase", PASSPHRASE) : Map.of();
        NodeUnstageVolumeRequest unstage = NodeUnstageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
            .setStagingTargetPath(staging.toString()).build();
        timeRounds(encrypted ? "qnap encrypted" : "qnap plain", () -> f.stage(v, staging, cap, secrets), () -> {
          assertThat(dev.caravan.storage.mount.MountTable.isMountPoint(staging)).isTrue();
          assertThat(Luks2.status(mapping).open()).as("the mapping while staged").isEqualTo(encrypted);
        }, () -> f.node.nodeUnstageVolume(unstage), () -> {
          assertThat(dev.caravan.storage.mount.MountTable.isMountPoint(staging)).isFalse();
          assertThat(Luks2.status(mapping).open()).isFalse();
        });
      }
    }
  }

  @Test
  void openAndCloseInProcessAgainstCryptsetup() throws IOException, InterruptedException {
    HostRequirements.assumeDmCrypt();
    HostRequirements.assumeTool("cryptsetup", "cryptsetup-bin");
    Path dir = Files.createTempDirectory("luks-cost-");
    Path image = dir.resolve("luks.img");
    SparseFiles.create(image, 64 * MIB);
    LoopDevice loop = LoopDevices.attach(image, false);
    String name = Luks2.mappingName("cost-" + System.nanoTime());
    try {
      Luks2.formatIfEmpty(loop.device(), KEY, KeySlotCost.DEFAULT);
      List<Long> openIn = new ArrayList<>();
      List<Long> closeIn = new ArrayList<>();
      List<Long> openOut = new ArrayList<>();
      List<Long> closeOut = new ArrayList<>();
      for (int i = 0; i < ROUNDS; i++) {
        long t0 = System.nanoTime();
        Luks2.open(loop.device(), name, KEY);
        long t1 = System.nanoTime();
        assertThat(Luks2.status(name).open()).isTrue();
        long t2 = System.nanoTime();
        Luks2.close(name);
        long t3 = System.nanoTime();
        assertThat(Luks2.status(name).open()).isFalse();
        openIn.add(t1 - t0);
        closeIn.add(t3 - t2);

        long t4 = System.nanoTime();
        Process open = new ProcessBuilder("cryptsetup", "open", "--type", "luks2", "--key-file=-",
            loop.device().toString(), name).redirectErrorStream(true).start();
        try (OutputStream in = open.getOutputStream()) {
          in.write(KEY);
        }
        assertThat(open.waitFor()).as(new String(open.getInputStream().readAllBytes(), StandardCharsets.UTF_8)).isZero();
        long t5 = System.nanoTime();
        assertThat(Luks2.status(name).open()).isTrue();
        long t6 = System.nanoTime();
        Process close = new ProcessBuilder("cryptsetup", "close", name).redirectErrorStream(true).start();
        assertThat(close.waitFor()).isZero();
        long t7 = System.nanoTime();
        assertThat(Luks2.status(name).open()).isFalse();
        openOut.add(t5 - t4);
        closeOut.add(t7 - t6);
      }
      System.out.printf("COST in process: open median %d ms, close median %d ms; cryptsetup: open median %d ms,"
          + " close median %d ms (%d rounds)%n", median(openIn), median(closeIn), median(openOut), median(closeOut), ROUNDS);
    } finally {
      Luks2.close(name);
      LoopDevices.detach(loop);
      Files.deleteIfExists(image);
      Files.deleteIfExists(dir);
    }
  }

  /**
   * Sequential write throughput through a LUKS2 mapping against the plain loop device, side by side
   * in one run: {@code dd bs=1M oflag=direct} (one writer, one 1 MiB request in flight, bypassing the
   * page cache) of {@value #WRITE_MIB} MiB onto each, in alternating rounds. Both loop devices sit
   * over sparse files in the guest's memory, so the figures are the cost of the cipher
   * (aes-xts-plain64, 512-bit key) and the block layers, not of a disk.
   */
  @Test
  void writeThroughputThroughTheMappingAgainstThePlainLoopDevice() throws IOException, InterruptedException {
    HostRequirements.assumeDmCrypt();
    HostRequirements.assumeTool("dd", "coreutils");
    Path dir = Files.createTempDirectory("luks-throughput-");
    Path plainImage = dir.resolve("plain.img");
    Path luksImage = dir.resolve("luks.img");
    SparseFiles.create(plainImage, WRITE_MIB * MIB);
    SparseFiles.create(luksImage, WRITE_MIB * MIB + Luks2.HEADER_BYTES);
    LoopDevice plain = LoopDevices.attach(plainImage, false);
    LoopDevice luks = LoopDevices.attach(luksImage, false);
    String name = Luks2.mappingName("throughput-" + System.nanoTime());
    try {
      // The key slot's cost is paid at open, not per write: the least is enough here.
      Luks2.formatIfEmpty(luks.device(), KEY, KeySlotCost.iterTime(Duration.ofMillis(KeySlotCost.MIN_ITER_TIME_MS)));
      Path mapping = Luks2.open(luks.device(), name, KEY);
      assertThat(Luks2.status(name).sizeBytes()).isEqualTo(WRITE_MIB * MIB);
      List<Double> plainRates = new ArrayList<>();
      List<Double> luksRates = new ArrayList<>();
      for (int i = 0; i < THROUGHPUT_ROUNDS; i++) {
        plainRates.add(ddWrite(plain.device()));
        luksRates.add(ddWrite(mapping));
      }
      // What reached the loop device under the mapping is ciphertext, not the zeros dd wrote.
      byte[] stored = new byte[4096];
      try (var ch = java.nio.channels.FileChannel.open(luks.device())) {
        ch.read(java.nio.ByteBuffer.wrap(stored), Luks2.HEADER_BYTES);
      }
      assertThat(stored).as("ciphertext under the mapping").isNotEqualTo(new byte[stored.length]);
      double p = medianRate(plainRates);
      double e = medianRate(luksRates);
      System.out.printf("COST write throughput, dd bs=1M oflag=direct, %d MiB, median of %d rounds: plain loop"
          + " device %.0f MiB/s, LUKS2 mapping %.0f MiB/s (%.0f %%)%n", WRITE_MIB, THROUGHPUT_ROUNDS, p, e,
          100 * e / p);
    } finally {
      Luks2.close(name);
      LoopDevices.detach(luks);
      LoopDevices.detach(plain);
      Files.deleteIfExists(luksImage);
      Files.deleteIfExists(plainImage);
      Files.deleteIfExists(dir);
    }
  }

  /** Writes {@value #WRITE_MIB} MiB of zeros onto {@code device} with dd; MiB per second of wall time. */
  private static double ddWrite(Path device) throws IOException, InterruptedException {
    long t0 = System.nanoTime();
    Process dd = new ProcessBuilder("dd", "if=/dev/zero", "of=" + device, "bs=1M", "count=" + WRITE_MIB,
        "oflag=direct", "status=none").redirectErrorStream(true).start();
    String out = new String(dd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(dd.waitFor()).as(out).isZero();
    double seconds = (System.nanoTime() - t0) / 1e9;
    return WRITE_MIB / seconds;
  }

  private static double medianRate(List<Double> rates) {
    List<Double> sorted = new ArrayList<>(rates);
    Collections.sort(sorted);
    return sorted.get(sorted.size() / 2);
  }

  /**
   * A first stage and unstage (the first stage formats), then {@value #ROUNDS} timed rounds of a
   * volume's reuse, each checked while staged and after its unstage; prints both medians.
   */
  private static void timeRounds(String label, Runnable stage, Runnable whileStaged, Runnable unstage,
      Runnable afterUnstage) {
    stage.run();
    unstage.run();
    List<Long> stages = new ArrayList<>();
    List<Long> unstages = new ArrayList<>();
    for (int i = 0; i < ROUNDS; i++) {
      long t0 = System.nanoTime();
      stage.run();
      long t1 = System.nanoTime();
      whileStaged.run();
      unstage.run();
      long t2 = System.nanoTime();
      afterUnstage.run();
      stages.add(t1 - t0);
      unstages.add(t2 - t1);
    }
    System.out.printf("COST %s: NodeStageVolume median %d ms, NodeUnstageVolume median %d ms (%d rounds)%n",
        label, median(stages), median(unstages), ROUNDS);
  }

  private static long median(List<Long> nanos) {
    List<Long> sorted = new ArrayList<>(nanos);
    Collections.sort(sorted);
    return sorted.get(sorted.size() / 2) / 1_000_000;
  }
}

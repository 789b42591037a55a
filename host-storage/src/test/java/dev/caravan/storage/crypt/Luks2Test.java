package dev.caravan.storage.crypt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.internal.crypt.Cryptsetups;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What needs no device-mapper: mapping names, and formatting (header writes) on loop devices. */
class Luks2Test {
  private static final long SIZE = 64L << 20;
  private static final byte[] PASSPHRASE = "correct horse battery".getBytes(StandardCharsets.UTF_8);
  // The least work libcryptsetup accepts for a key slot (1 ms, 32 KiB, one thread): the tests that
  // are not about the cost spend as little time on it as they can.
  private static final KeySlotCost CHEAPEST = new KeySlotCost(Duration.ofMillis(1), 32, 1);

  @RegisterExtension final Scratch scratch = new Scratch();

  @Test
  void mappingNamesAreDeterministicDistinctAndValid() {
    String name = Luks2.mappingName("pvc-1/with spaces:and+symbols");
    assertThat(name).isEqualTo(Luks2.mappingName("pvc-1/with spaces:and+symbols"));
    assertThat(name).isNotEqualTo(Luks2.mappingName("pvc-2"));
    assertThat(name).matches("caravan-[0-9a-f]{32}");
  }

  @Test
  void anEmptyDeviceIsFormattedOnceAndThenLeftAlone() {
    HostRequirements.assumeRootWithLoopDevices();
    LoopDevice loop = LoopDevices.attach(scratch.image("empty.img", SIZE), false);
    try {
      assertThat(Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST))
          .isEqualTo(Luks2.FormatOutcome.FORMATTED);
      Signature made = Probe.probe(loop.device());
      assertThat(made.type()).contains("crypto_LUKS");
      assertThat(made.kind()).isEqualTo(Signature.Kind.CRYPTO);
      String uuid = made.uuid().orElseThrow();
      // Another passphrase changes nothing: the header is kept, its key slots untouched.
      assertThat(Luks2.formatIfEmpty(loop.device(), "other".getBytes(StandardCharsets.UTF_8), CHEAPEST))
          .isEqualTo(Luks2.FormatOutcome.ALREADY_LUKS2);
      assertThat(Probe.probe(loop.device()).uuid()).contains(uuid);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void concurrentFormatsOfOneEmptyDeviceWriteOneHeaderWhosePassphraseOpensIt() throws Exception {
    HostRequirements.assumeRootWithLoopDevices();
    LoopDevice loop = LoopDevices.attach(scratch.image("empty.img", SIZE), false);
    // Half the callers name the device through a symlink: the lock belongs to the device.
    Path link = Files.createSymbolicLink(scratch.dir().resolve("link"), loop.device());
    int callers = 4;
    CyclicBarrier start = new CyclicBarrier(callers);
    List<Luks2.FormatOutcome> outcomes = new ArrayList<>();
    try (ExecutorService pool = Executors.newFixedThreadPool(callers)) {
      List<Future<Luks2.FormatOutcome>> calls = new ArrayList<>();
      for (int i = 0; i < callers; i++) {
        Path name = i % 2 == 0 ? loop.device() : link;
        byte[] passphrase = ("passphrase of caller " + i).getBytes(StandardCharsets.UTF_8);
        calls.add(
            pool.submit(
                () -> {
                  start.await();
                  return Luks2.formatIfEmpty(name, passphrase, CHEAPEST);
                }));
      }
      for (Future<Luks2.FormatOutcome> call : calls) {
        outcomes.add(call.get());
      }
      assertThat(outcomes).containsOnlyOnce(Luks2.FormatOutcome.FORMATTED);
      int formatter = outcomes.indexOf(Luks2.FormatOutcome.FORMATTED);
      // The header on the device is the one the caller told FORMATTED wrote: its passphrase opens it.
      assertThat(
              Cryptsetups.verify(
                  loop.device().toString(),
                  ("passphrase of caller " + formatter).getBytes(StandardCharsets.UTF_8)))
          .isGreaterThanOrEqualTo(0);
    } finally {
      LoopDevices.detach(loop);
    }
    assertThat(outcomes)
        .filteredOn(outcome -> outcome != Luks2.FormatOutcome.FORMATTED)
        .hasSize(callers - 1)
        .containsOnly(Luks2.FormatOutcome.ALREADY_LUKS2);
  }

  @Test
  void theDefaultCostMakesAnArgon2idSlotWithinItsMemoryCeilingAndMoreWorkThanTheCheapest()
      throws IOException {
    // The one test that pays for the default: a second of argon2id (many seconds under emulation).
    HostRequirements.assumeRootWithLoopDevices();
    LoopDevice byDefault = LoopDevices.attach(scratch.image("default.img", SIZE), false);
    LoopDevice cheapest = LoopDevices.attach(scratch.image("cheapest.img", SIZE), false);
    try {
      Luks2.formatIfEmpty(byDefault.device(), PASSPHRASE, KeySlotCost.DEFAULT);
      Luks2.formatIfEmpty(cheapest.device(), PASSPHRASE, CHEAPEST);
      SlotKdf made = SlotKdf.ofOnlySlot(byDefault.device());
      SlotKdf least = SlotKdf.ofOnlySlot(cheapest.device());

      assertThat(made.type()).isEqualTo("argon2id");
      // The benchmark may settle below the ceiling on a slow CPU, never above it.
      assertThat(made.memoryKiB()).isBetween(32L, 256L * 1024);
      assertThat(made.cpus()).isBetween(1L, 4L);
      assertThat(least.type()).isEqualTo("argon2id");
      assertThat(least.time() * least.memoryKiB())
          .as("argon2id passes times memory of the cheapest slot against the default's")
          .isLessThan(made.time() * made.memoryKiB());
    } finally {
      LoopDevices.detach(byDefault);
      LoopDevices.detach(cheapest);
    }
  }

  @Test
  void aMemoryCeilingBoundsTheSlotsArgon2idAndTheTimeIsBoughtWithPasses() throws IOException {
    HostRequirements.assumeRootWithLoopDevices();
    LoopDevice roomy = LoopDevices.attach(scratch.image("roomy.img", SIZE), false);
    LoopDevice small = LoopDevices.attach(scratch.image("small.img", SIZE), false);
    // A tenth of a second: enough work that the default ceiling's benchmark settles well above 1 MiB.
    KeySlotCost tenth = KeySlotCost.iterTime(Duration.ofMillis(100));
    try {
      Luks2.formatIfEmpty(roomy.device(), PASSPHRASE, tenth);
      Luks2.formatIfEmpty(small.device(), PASSPHRASE, tenth.withMemoryKiB(1024));
      SlotKdf unbounded = SlotKdf.ofOnlySlot(roomy.device());
      SlotKdf bounded = SlotKdf.ofOnlySlot(small.device());
      assertThat(unbounded.memoryKiB()).as("the default ceiling's slot").isGreaterThan(1024);
      assertThat(bounded.type()).isEqualTo("argon2id");
      assertThat(bounded.memoryKiB()).as("the slot made within 1 MiB").isBetween(32L, 1024L);
      assertThat(bounded.time()).as("passes over the smaller memory").isGreaterThanOrEqualTo(unbounded.time());
      assertThat(Cryptsetups.verify(small.device().toString(), PASSPHRASE)).isGreaterThanOrEqualTo(0);
    } finally {
      LoopDevices.detach(roomy);
      LoopDevices.detach(small);
    }
  }

  /** The argon2id parameters key slot 0 records in a LUKS2 header's JSON metadata. */
  record SlotKdf(String type, long time, long memoryKiB, long cpus) {
    private static final Pattern KDF = Pattern.compile("\"kdf\"\\s*:\\s*\\{([^}]*)\\}");

    /** Read from the header on {@code device}, which has one key slot. */
    static SlotKdf ofOnlySlot(Path device) throws IOException {
      // The binary header is 4 KiB; the JSON area follows it, up to the header's size.
      ByteBuffer head = ByteBuffer.allocate(16 * 1024);
      try (FileChannel in = FileChannel.open(device, StandardOpenOption.READ)) {
        int read;
        do {
          read = in.read(head, head.position());
        } while (read > 0 && head.hasRemaining());
      }
      byte[] bytes = head.array();
      int end = 4096;
      while (end < bytes.length && bytes[end] != 0) {
        end++;
      }
      String json = new String(bytes, 4096, end - 4096, StandardCharsets.UTF_8);
      Matcher kdf = KDF.matcher(json);
      assertThat(kdf.find()).as("a kdf object in %s", json).isTrue();
      String body = kdf.group(1);
      assertThat(kdf.find()).as("one key slot in %s", json).isFalse();
      return new SlotKdf(
          text(body, "type"), number(body, "time"), number(body, "memory"), number(body, "cpus"));
    }

    private static String text(String body, String field) {
      Matcher m = Pattern.compile("\"" + field + "\"\\s*:\\s*\"([^\"]*)\"").matcher(body);
      assertThat(m.find()).as("%s in %s", field, body).isTrue();
      return m.group(1);
    }

    private static long number(String body, String field) {
      Matcher m = Pattern.compile("\"" + field + "\"\\s*:\\s*([0-9]+)").matcher(body);
      assertThat(m.find()).as("%s in %s", field, body).isTrue();
      return Long.parseLong(m.group(1));
    }
  }

  @Test
  void aDeviceWithAFilesystemIsNeverFormatted() {
    HostRequirements.assumeRootWithLoopDevices();
    HostRequirements.assumeTool("mkfs.ext4", "e2fsprogs");
    LoopDevice loop = LoopDevices.attach(scratch.image("ext4.img", SIZE), false);
    try {
      ToolRunner.run(List.of("mkfs.ext4", "-q", loop.device().toString()), Duration.ofMinutes(1));
      Optional<String> before = Probe.probe(loop.device()).uuid();
      assertThatThrownBy(() -> Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST))
          .isInstanceOfSatisfying(
              DataPresentException.class,
              e -> {
                assertThat(e.found()).isEqualTo("ext4 filesystem");
                assertThat(e.getMessage()).doesNotContain(new String(PASSPHRASE, StandardCharsets.UTF_8));
              });
      Signature after = Probe.probe(loop.device());
      assertThat(after.type()).contains("ext4");
      assertThat(after.uuid()).isEqualTo(before);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void anEmptyPassphraseIsRefusedBeforeTheDeviceIsTouched() {
    assertThatThrownBy(() -> Luks2.formatIfEmpty(scratch.dir().resolve("none"), new byte[0], CHEAPEST))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("the passphrase is empty");
  }
}

package dev.caravan.bindings;

import static dev.caravan.bindings.blkid.Blkid.BLKID_SUBLKS_LABEL;
import static dev.caravan.bindings.blkid.Blkid.BLKID_SUBLKS_TYPE;
import static dev.caravan.bindings.blkid.Blkid.BLKID_SUBLKS_USAGE;
import static dev.caravan.bindings.blkid.Blkid.BLKID_SUBLKS_UUID;
import static dev.caravan.bindings.blkid.Blkid.C_POINTER;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.NativeLibraries.Library;
import dev.caravan.bindings.blkid.Blkid;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Probes regular image files; no block devices or privileges needed. */
class BlkidTest {

  private static final long MIB = 1024 * 1024;

  @TempDir Path dir;

  @BeforeAll
  static void requireLibblkid() {
    assumeTrue(
        NativeLibraries.isAvailable(Library.BLKID),
        () -> NativeLibraries.status(Library.BLKID).problem().orElse(""));
  }

  @Test
  void findsExt4CreatedByMkfs() throws Exception {
    Optional<Path> mkfs = findTool("mkfs.ext4");
    assumeTrue(mkfs.isPresent(), "mkfs.ext4 (e2fsprogs) not installed");
    Path image = sparseFile("ext4.img", 16 * MIB);
    run(mkfs.get().toString(), "-F", "-q", "-L", "caravan-test", image.toString());

    try (Arena arena = Arena.ofConfined()) {
      MemorySegment pr = Blkid.blkid_new_probe_from_filename(arena.allocateFrom(image.toString()));
      assertThat(pr).isNotEqualTo(MemorySegment.NULL);
      try {
        assertThat(Blkid.blkid_probe_get_size(pr)).isEqualTo(16 * MIB);
        assertThat(Blkid.blkid_probe_enable_superblocks(pr, 1)).isZero();
        int flags =
            BLKID_SUBLKS_TYPE() | BLKID_SUBLKS_UUID() | BLKID_SUBLKS_LABEL() | BLKID_SUBLKS_USAGE();
        assertThat(Blkid.blkid_probe_set_superblocks_flags(pr, flags)).isZero();

        assertThat(Blkid.blkid_do_safeprobe(pr)).isZero();

        assertThat(lookup(arena, pr, "TYPE")).hasValue("ext4");
        assertThat(lookup(arena, pr, "LABEL")).hasValue("caravan-test");
        assertThat(lookup(arena, pr, "USAGE")).hasValue("filesystem");
        assertThat(lookup(arena, pr, "UUID")).get().asString().hasSize(36);
        assertThat(lookup(arena, pr, "PTTYPE")).isEmpty();
        assertThat(Blkid.blkid_probe_has_value(pr, arena.allocateFrom("TYPE"))).isEqualTo(1);
        assertThat(allValues(arena, pr))
            .containsEntry("TYPE", "ext4")
            .containsEntry("LABEL", "caravan-test")
            .containsKey("UUID");
      } finally {
        Blkid.blkid_free_probe(pr);
      }
    }
  }

  @Test
  void reportsNothingOnAZeroedFile() throws Exception {
    Path image = sparseFile("empty.img", 4 * MIB);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment pr = Blkid.blkid_new_probe_from_filename(arena.allocateFrom(image.toString()));
      assertThat(pr).isNotEqualTo(MemorySegment.NULL);
      try {
        assertThat(Blkid.blkid_probe_enable_partitions(pr, 1)).isZero();
        // 1 = nothing detected (0 = found, -1 = error, -2 = ambivalent result).
        assertThat(Blkid.blkid_do_safeprobe(pr)).isEqualTo(1);
        assertThat(Blkid.blkid_probe_numof_values(pr)).isZero();
        assertThat(lookup(arena, pr, "TYPE")).isEmpty();
      } finally {
        Blkid.blkid_free_probe(pr);
      }
    }
  }

  @Test
  void readsADosPartitionTable() throws Exception {
    Path image = sparseFile("mbr.img", 4 * MIB);
    writeMbrWithOneLinuxPartition(image, 2048, 4096);

    try (Arena arena = Arena.ofConfined()) {
      MemorySegment pr = Blkid.blkid_new_probe_from_filename(arena.allocateFrom(image.toString()));
      assertThat(pr).isNotEqualTo(MemorySegment.NULL);
      try {
        assertThat(Blkid.blkid_probe_enable_partitions(pr, 1)).isZero();
        assertThat(Blkid.blkid_probe_set_partitions_flags(pr, Blkid.BLKID_PARTS_MAGIC()))
            .isZero();
        assertThat(Blkid.blkid_do_safeprobe(pr)).isZero();
        assertThat(lookup(arena, pr, "PTTYPE")).hasValue("dos");

        MemorySegment partitions = Blkid.blkid_probe_get_partitions(pr);
        assertThat(partitions).isNotEqualTo(MemorySegment.NULL);
        assertThat(Blkid.blkid_partlist_numof_partitions(partitions)).isEqualTo(1);
        MemorySegment table = Blkid.blkid_partlist_get_table(partitions);
        assertThat(table).isNotEqualTo(MemorySegment.NULL);
        assertThat(Blkid.blkid_parttable_get_type(table).getString(0)).isEqualTo("dos");
      } finally {
        Blkid.blkid_free_probe(pr);
      }
    }
  }

  @Test
  void returnsNullForAMissingFile() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment pr =
          Blkid.blkid_new_probe_from_filename(
              arena.allocateFrom(dir.resolve("does-not-exist").toString()));
      assertThat(pr).isEqualTo(MemorySegment.NULL);
    }
  }

  private static Optional<String> lookup(Arena arena, MemorySegment pr, String name) {
    MemorySegment data = arena.allocate(C_POINTER);
    MemorySegment len = arena.allocate(JAVA_LONG);
    if (Blkid.blkid_probe_lookup_value(pr, arena.allocateFrom(name), data, len) != 0) {
      return Optional.empty();
    }
    // len counts the terminating NUL.
    assertThat(len.get(JAVA_LONG, 0)).isPositive();
    return Optional.of(data.get(C_POINTER, 0).getString(0));
  }

  private static Map<String, String> allValues(Arena arena, MemorySegment pr) {
    Map<String, String> values = new HashMap<>();
    int count = Blkid.blkid_probe_numof_values(pr);
    MemorySegment name = arena.allocate(C_POINTER);
    MemorySegment data = arena.allocate(C_POINTER);
    MemorySegment len = arena.allocate(JAVA_LONG);
    for (int i = 0; i < count; i++) {
      assertThat(Blkid.blkid_probe_get_value(pr, i, name, data, len)).isZero();
      values.put(name.get(C_POINTER, 0).getString(0), data.get(C_POINTER, 0).getString(0));
    }
    return values;
  }

  private Path sparseFile(String name, long size) throws IOException {
    Path file = dir.resolve(name);
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.setLength(size);
    }
    return file;
  }

  private static void writeMbrWithOneLinuxPartition(Path image, int startLba, int sectors)
      throws IOException {
    ByteBuffer mbr = ByteBuffer.allocate(512).order(ByteOrder.LITTLE_ENDIAN);
    mbr.putInt(440, 0xCA7A0001); // disk identifier
    int entry = 446;
    mbr.put(entry, (byte) 0x00); // not bootable
    mbr.put(entry + 4, (byte) 0x83); // Linux
    mbr.putInt(entry + 8, startLba);
    mbr.putInt(entry + 12, sectors);
    mbr.put(510, (byte) 0x55);
    mbr.put(511, (byte) 0xAA);
    try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
      channel.write(mbr, 0);
    }
  }

  private static Optional<Path> findTool(String name) {
    List<String> dirs = new ArrayList<>();
    String path = System.getenv("PATH");
    if (path != null) {
      dirs.addAll(Arrays.asList(path.split(":")));
    }
    dirs.addAll(List.of("/usr/sbin", "/sbin", "/usr/bin", "/bin"));
    return dirs.stream()
        .filter(d -> !d.isEmpty())
        .map(d -> Path.of(d, name))
        .filter(Files::isExecutable)
        .findFirst();
  }

  private static void run(String... command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(process.getInputStream().readAllBytes(), UTF_8);
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("%s timed out", command[0]).isTrue();
    assertThat(process.exitValue()).as("%s: %s", String.join(" ", command), output).isZero();
  }
}

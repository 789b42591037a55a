package dev.caravan.storage.internal.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.zfs.ZfsCore;
import dev.caravan.storage.internal.sys.KernelBuffers;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Pins {@link ZfsCommand} to the real {@code zfs_cmd_t}. The expected layout is {@code
 * native/zfs-cmd/zfs_cmd_t.layout}, the output of {@code native/zfs-cmd/layout.c} compiled against
 * the OpenZFS headers; the Java layout must match every line of it, and, where a C compiler and the
 * headers are installed (the development host after {@code scripts/guest-test setup}, the guest),
 * the table must match what the program prints now.
 */
class ZfsCommandTest {
  private static final Path NATIVE = findNative();
  private static final Path TABLE = NATIVE.resolve("zfs_cmd_t.layout");

  /** The table of {@code layout.c}: struct sizes, members and constants, in its order. */
  record Table(Map<String, Long> structs, Map<String, List<Member>> members, Map<String, Long> constants) {
    static Table parse(List<String> lines) {
      Map<String, Long> structs = new LinkedHashMap<>();
      Map<String, List<Member>> members = new LinkedHashMap<>();
      Map<String, Long> constants = new LinkedHashMap<>();
      for (String line : lines) {
        if (line.isBlank() || line.startsWith("#")) {
          continue;
        }
        String[] f = line.split(" ", -1);
        switch (f[0]) {
          case "struct" -> structs.put(f[1], Long.parseLong(f[2]));
          case "field" ->
              members
                  .computeIfAbsent(f[1], k -> new ArrayList<>())
                  .add(new Member(f[2], Long.parseLong(f[3]), Long.parseLong(f[4])));
          case "constant" -> constants.put(f[1], Long.parseLong(f[2]));
          default -> throw new AssertionError("unexpected line in the layout table: " + line);
        }
      }
      return new Table(structs, members, constants);
    }
  }

  record Member(String name, long offset, long size) {}

  @Test
  void everyMemberMatchesTheTable() throws IOException {
    Table table = Table.parse(Files.readAllLines(TABLE));
    Map<String, StructLayout> java =
        Map.of("zfs_cmd_t", ZfsCommand.LAYOUT, "dmu_objset_stats_t", ZfsCommand.OBJSET_STATS);
    assertThat(table.structs().keySet()).containsExactlyInAnyOrderElementsOf(java.keySet());
    java.forEach(
        (type, layout) -> {
          assertThat(layout.byteSize()).as("sizeof(%s)", type).isEqualTo(table.structs().get(type));
          assertThat(named(layout)).as(type).containsExactlyElementsOf(table.members().get(type));
        });
  }

  @Test
  void everyConstantMatchesTheTable() throws IOException {
    Map<String, Long> java = new LinkedHashMap<>();
    java.put("MAXPATHLEN", (long) ZfsCommand.NAME_SIZE);
    java.put("ZFS_MAX_DATASET_NAME_LEN", (long) ZfsCommand.MAX_DATASET_NAME);
    java.put("ZFS_IOC_POOL_STATS", ZfsIoctls.POOL_STATS.request());
    java.put("ZFS_IOC_OBJSET_STATS", ZfsIoctls.OBJSET_STATS.request());
    java.put("ZFS_IOC_DATASET_LIST_NEXT", ZfsIoctls.DATASET_LIST_NEXT.request());
    java.put("ZFS_IOC_SNAPSHOT_LIST_NEXT", ZfsIoctls.SNAPSHOT_LIST_NEXT.request());
    java.put("ZFS_IOC_SET_PROP", ZfsIoctls.SET_PROP.request());
    java.put("BLKZNAME", ZvolDevices.BLKZNAME.request());
    java.put("DMU_OST_ZFS", (long) ZfsCommand.DMU_OST_ZFS);
    java.put("DMU_OST_ZVOL", (long) ZfsCommand.DMU_OST_ZVOL);
    assertThat(Table.parse(Files.readAllLines(TABLE)).constants()).isEqualTo(java);
    // The generated bindings came from the same headers.
    assertThat((long) ZfsCore.DMU_OST_ZVOL()).isEqualTo(ZfsCommand.DMU_OST_ZVOL);
    assertThat((long) ZfsCore.DMU_OST_ZFS()).isEqualTo(ZfsCommand.DMU_OST_ZFS);
  }

  @Test
  void theVerifiedVersionsAreTheTables() throws IOException {
    String line =
        Files.readAllLines(TABLE).stream()
            .filter(l -> l.startsWith("# verified: "))
            .findFirst()
            .orElseThrow(() -> new AssertionError(TABLE + " has no '# verified: ' line"));
    Set<String> listed = new TreeSet<>(Arrays.asList(line.substring(12).strip().split(" +")));
    assertThat(listed).isEqualTo(new TreeSet<>(ZfsModuleVersion.VERIFIED));
  }

  /**
   * Compiles {@code layout.c} against the installed headers and compares its output with the table,
   * line by line: the check that keeps the table (and so the Java layout) from drifting away from
   * the real struct.
   */
  @Test
  void theInstalledHeadersGiveTheTable() throws Exception {
    Process p =
        new ProcessBuilder(NATIVE.resolve("print-layout").toString())
            .redirectError(ProcessBuilder.Redirect.PIPE)
            .start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assumeTrue(
        p.exitValue() != 2,
        "cannot compile native/zfs-cmd/layout.c here (" + err + "): the table is not checked"
            + " against real headers in this run");
    assertThat(p.exitValue()).as(err).isZero();

    List<String> lines = out.lines().toList();
    String header = lines.getFirst(); // "# OpenZFS 2.3.2 headers (...)"
    assertThat(header).startsWith("# OpenZFS ");
    String version = header.split(" ", -1)[2];
    assertThat(lines.stream().filter(l -> !l.startsWith("#")).toList())
        .as("layout.c compiled against the OpenZFS %s headers (%s) vs %s", version, header, TABLE)
        .containsExactlyElementsOf(
            Files.readAllLines(TABLE).stream().filter(l -> !l.startsWith("#")).toList());
    assertThat(ZfsModuleVersion.VERIFIED)
        .as("the installed OpenZFS %s headers match the table: add %s to its '# verified:' line"
            + " and to ZfsModuleVersion.VERIFIED", version, version)
        .contains(version);
  }

  @Test
  void fieldsRoundTrip() {
    try (Arena arena = Arena.ofConfined();
        KernelBuffers buffers = new KernelBuffers()) {
      ZfsCommand zc = ZfsCommand.allocate(buffers).name("tank/a/much/longer/name").name("tank/vol");
      assertThat(zc.name()).isEqualTo("tank/vol");
      zc.cookie(42).simple(true);
      assertThat(zc.cookie()).isEqualTo(42);
      assertThat(zc.segment().get(ValueLayout.JAVA_BYTE, 13668)).isEqualTo((byte) 1);

      MemorySegment buffer = arena.allocate(1024);
      zc.destination(buffer);
      assertThat(zc.segment().get(ValueLayout.JAVA_LONG, 4112)).isEqualTo(buffer.address());
      assertThat(zc.destinationSize()).isEqualTo(1024);
      assertThat(zc.destinationFilled()).isFalse();

      MemorySegment stats = zc.segment().asSlice(12704, 288);
      stats.set(ValueLayout.JAVA_LONG, 0, 2); // clones
      stats.set(ValueLayout.JAVA_LONG, 8, 77); // creation txg
      stats.set(ValueLayout.JAVA_INT, 24, ZfsCommand.DMU_OST_ZVOL);
      stats.set(ValueLayout.JAVA_BYTE, 28, (byte) 1);
      byte[] origin = "tank/vol@s1".getBytes(StandardCharsets.UTF_8);
      MemorySegment.copy(origin, 0, stats, ValueLayout.JAVA_BYTE, 31, origin.length);
      assertThat(zc.objsetStats())
          .isEqualTo(new ZfsCommand.ObjsetStats(2, 77, 0, 3, true, false, "tank/vol@s1"));
    }
  }

  @Test
  void refusesANameThatDoesNotFit() {
    try (Arena arena = Arena.ofConfined();
        KernelBuffers buffers = new KernelBuffers()) {
      assertThatThrownBy(() -> ZfsCommand.allocate(buffers).name("x".repeat(4096)))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  /** The named members of {@code layout} (padding left out), as the table lists them. */
  private static List<Member> named(StructLayout layout) {
    List<Member> members = new ArrayList<>();
    long offset = 0;
    for (MemoryLayout member : layout.memberLayouts()) {
      if (member.name().isPresent()) {
        members.add(new Member(member.name().get(), offset, member.byteSize()));
      }
      offset += member.byteSize();
    }
    return members;
  }

  /** {@code native/zfs-cmd} of this checkout, from the module directory or the checkout root. */
  private static Path findNative() {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      Path candidate = dir.resolve("native/zfs-cmd");
      if (Files.isRegularFile(candidate.resolve("zfs_cmd_t.layout"))) {
        return candidate;
      }
    }
    throw new AssertionError("no native/zfs-cmd/zfs_cmd_t.layout above " + Path.of("").toAbsolutePath());
  }
}

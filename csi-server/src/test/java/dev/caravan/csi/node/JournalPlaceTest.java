package dev.caravan.csi.node;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.node.StagedVolume.Published;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where the journal lives, decided from the real mount table: on a tmpfs the test mounts for
 * itself, on the disk the test directory lies on, and in a container only when the runtime directory
 * is itself a mount; and the move of an existing journal, which loses no record and keeps each one's
 * age.
 */
class JournalPlaceTest {
  @TempDir Path work;

  private final List<Path> mounted = new ArrayList<>();

  @AfterEach
  void unmount() {
    for (Path p : mounted.reversed()) {
      while (MountTable.isMountPoint(p) && Mounts.unmount(p)) {
        // stacked
      }
    }
  }

  private Path tmpfs(String name) throws Exception {
    HostRequirements.assumeRoot();
    Path at = Files.createDirectories(work.resolve(name));
    Mounts.mount(Path.of("tmpfs"), at, "tmpfs", Set.of(), "size=4m");
    mounted.add(at);
    return at;
  }

  private static StagedVolume volume(String id) {
    return new StagedVolume(id, Map.of(), AccessType.MOUNT, "ext4", List.of(), Optional.of(Path.of("/dev/loop7")),
        List.of(Path.of("/staging/" + id)), List.of(new Published(Path.of("/target/" + id), Path.of("/staging/" + id), false)));
  }

  @Test
  void onATmpfsTheJournalLivesThereInADirectoryNamedAfterTheDataDirectory() throws Exception {
    Path run = tmpfs("run").resolve("caravan");
    Path data = Files.createDirectories(work.resolve("data"));

    JournalPlace place = JournalPlace.of(data, run, false);
    assertThat(place.dir()).isEqualTo(run.resolve(JournalPlace.instanceName(data)).resolve("node"));
    assertThat(place.other()).isEqualTo(data.resolve("node"));
    assertThat(place.why()).contains("is on a tmpfs");

    Path link = Files.createSymbolicLink(work.resolve("data-link"), data);
    assertThat(JournalPlace.instanceName(link)).as("a symlink to the same data directory agrees")
        .isEqualTo(JournalPlace.instanceName(data));
    assertThat(JournalPlace.instanceName(work.resolve("other-data")))
        .as("another data directory never shares the journal").isNotEqualTo(JournalPlace.instanceName(data));
  }

  @Test
  void offATmpfsTheJournalStaysInTheDataDirectoryNamingWhy() throws Exception {
    HostRequirements.assumeRoot();
    Path run = Files.createDirectories(work.resolve("plain-run"));
    Assumptions.notOnTmpfs(run);
    Path data = work.resolve("data");

    JournalPlace place = JournalPlace.of(data, run.resolve("caravan"), false);
    assertThat(place.dir()).isEqualTo(data.resolve("node"));
    assertThat(place.why()).contains("not a tmpfs").contains(MountTable.containing(run).fsType());
  }

  @Test
  void inAContainerOnlyAMountOfItsOwnCounts() throws Exception {
    Path runTmpfs = tmpfs("container-run");
    Path data = work.resolve("data");

    JournalPlace privateRun = JournalPlace.of(data, runTmpfs.resolve("caravan"), true);
    assertThat(privateRun.dir()).as("the container's own /run goes with the container").isEqualTo(data.resolve("node"));
    assertThat(privateRun.why()).contains("in a container").contains("bind the host's");

    Path boundIn = Files.createDirectories(runTmpfs.resolve("caravan"));
    Mounts.mount(Path.of("tmpfs"), boundIn, "tmpfs", Set.of(), "size=1m");
    mounted.add(boundIn);
    JournalPlace hostRun = JournalPlace.of(data, boundIn, true);
    assertThat(hostRun.dir()).isEqualTo(boundIn.resolve(JournalPlace.instanceName(data)).resolve("node"));
    assertThat(hostRun.why()).contains("is on a tmpfs");
  }

  @Test
  void anExistingJournalMovesWithEveryRecordItsAgeAndItsUnreadableFiles() throws Exception {
    Path run = tmpfs("run").resolve("caravan");
    Path data = work.resolve("data");
    NodeJournal before = NodeJournal.open(data.resolve("node"));
    before.put(volume("a"));
    before.put(volume("b"));
    Path garbled = data.resolve("node").resolve("c.staged");
    Files.writeString(garbled, "not a record", StandardCharsets.UTF_8);
    FileTime longAgo = FileTime.from(Instant.parse("2001-01-01T00:00:00Z"));
    Files.setLastModifiedTime(garbled, longAgo);

    JournalPlace place = JournalPlace.of(data, run, false);
    assertThat(place.migrate()).isEqualTo(3);

    assertThat(list(data.resolve("node"))).as("nothing left behind").isEmpty();
    NodeJournal after = NodeJournal.open(place.dir());
    assertThat(after.all()).containsExactlyInAnyOrder(volume("a"), volume("b"));
    assertThat(after.unreadable("c")).singleElement().satisfies(u -> {
      assertThat(u.file().getParent()).isEqualTo(place.dir());
      assertThat(u.stale()).as("written before this boot, and still known to be").isTrue();
    });
    assertThat(Files.getLastModifiedTime(place.dir().resolve("c.staged"))).isEqualTo(longAgo);
    assertThat(place.migrate()).as("a second start moves nothing").isZero();
  }

  @Test
  void aMoveCutShortByACrashIsFinishedByTheNextStart() throws Exception {
    Path run = tmpfs("run").resolve("caravan");
    Path data = work.resolve("data");
    NodeJournal.open(data.resolve("node")).put(volume("a"));
    JournalPlace place = JournalPlace.of(data, run, false);
    String record = list(data.resolve("node")).getFirst();
    // As a crash leaves it: one copy renamed into place, another still under its temporary name,
    // and every original still where it was.
    Files.createDirectories(place.dir());
    Files.copy(data.resolve("node").resolve(record), place.dir().resolve(record));
    Files.writeString(place.dir().resolve("." + record + ".migrating"), "half", StandardCharsets.UTF_8);

    assertThat(place.migrate()).isEqualTo(1);
    assertThat(list(place.dir())).containsExactly(record);
    assertThat(list(data.resolve("node"))).isEmpty();
    assertThat(NodeJournal.open(place.dir()).all()).containsExactly(volume("a"));
  }

  private static List<String> list(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  private static final class Assumptions {
    private Assumptions() {}

    static void notOnTmpfs(Path p) {
      org.junit.jupiter.api.Assumptions.assumeFalse(MountTable.containing(p).fsType().equals("tmpfs"),
          "the test directory " + p + " is itself on a tmpfs");
    }
  }
}

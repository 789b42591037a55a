package dev.caravan.csi.node;

import static dev.caravan.csi.testing.RecordText.withoutDate;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.node.StagedVolume.Published;
import dev.caravan.csi.testing.RecordText;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NodeJournalTest {
  private static final Logger JOURNAL_LOG = Logger.getLogger(NodeJournal.class.getName());

  @TempDir Path dir;

  private final List<LogRecord> warnings = new ArrayList<>();
  private final Handler capture = new Handler() {
    @Override
    public void publish(LogRecord r) {
      if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
        synchronized (warnings) {
          warnings.add(r);
        }
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  @BeforeEach
  void captureWarnings() {
    JOURNAL_LOG.addHandler(capture);
  }

  @AfterEach
  void stopCapturing() {
    JOURNAL_LOG.removeHandler(capture);
  }

  private static StagedVolume volume(String id) {
    return new StagedVolume(id, Map.of("k", "v"), AccessType.MOUNT, "ext4", List.of("noatime"),
        Optional.of(Path.of("/dev/loop7")), List.of(Path.of("/staging/" + id)),
        List.of(new Published(Path.of("/target/" + id), Path.of("/staging/" + id), false)));
  }

  @Test
  void aRecordReadsAndWritesAsOnDisk() {
    String onDisk = RecordText.of(
        "#caravan node journal",
        "#Fri Dec 04 21:40:41 UTC 2026",
        "accessType=MOUNT",
        "context.k=v",
        "device=/dev/loop7",
        "fsType=ext4",
        "mountFlags=noatime",
        "staging.0=/staging/vol/1",
        "staging.0.complete=true",
        "staging.0.mountFlags=noatime",
        "target.0.mountFlags=",
        "target.0.path=/target/vol/1",
        "target.0.readOnly=false",
        "target.0.staging=/staging/vol/1",
        "volumeId=vol/1");

    assertThat(NodeJournal.decode(onDisk.getBytes(StandardCharsets.UTF_8))).isEqualTo(volume("vol/1"));
    assertThat(withoutDate(NodeJournal.encode(volume("vol/1")))).isEqualTo(withoutDate(onDisk));
  }

  @Test
  void recordsSurviveReopening() {
    NodeJournal journal = NodeJournal.open(dir);
    journal.put(volume("a"));
    journal.put(volume("b/c"));
    journal.remove("a");

    NodeJournal reopened = NodeJournal.open(dir);
    assertThat(reopened.all()).containsExactly(volume("b/c"));
    assertThat(warnings).isEmpty();
  }

  @Test
  void mountIdsAreKeptOnlyForPathsTheRecordStillHasSoTheRecordReadsBackAsWritten() {
    Path target = Path.of("/target/a");
    Path staging = Path.of("/staging/a");
    StagedVolume mounted = volume("a").withMountId(staging, java.util.OptionalInt.of(41))
        .withMountId(target, java.util.OptionalInt.of(42));
    // How a start-up reconcile drops what is gone: whole lists replaced, not one path removed.
    StagedVolume trimmed = mounted.withTargets(List.of()).withStagings(List.of());

    assertThat(trimmed.mountId(target)).isEmpty();
    assertThat(trimmed.mountId(staging)).isEmpty();
    assertThat(NodeJournal.decode(NodeJournal.encode(trimmed))).isEqualTo(trimmed);
    assertThat(NodeJournal.decode(NodeJournal.encode(mounted))).isEqualTo(mounted);
  }

  @Test
  void unreadableRecordsAreKeptWithAWarningNamingTheFileAndTheirVolumesCountAsInUse() throws Exception {
    NodeJournal journal = NodeJournal.open(dir);
    for (String id : List.of("good", "empty", "truncated", "garbled", "zeros")) {
      journal.put(volume(id));
    }
    byte[] full = Files.readAllBytes(journal.file("truncated"));
    Files.write(journal.file("empty"), new byte[0]);
    Files.write(journal.file("truncated"), Arrays.copyOf(full, full.length / 3));
    Files.write(journal.file("garbled"), "volumeId=garbled\naccessType=SIDEWAYS\n".getBytes(StandardCharsets.UTF_8));
    Files.write(journal.file("zeros"), new byte[full.length]);
    // a replace cut short before its rename
    Path temp = dir.resolve("." + journal.file("good").getFileName() + ".tmp-1234");
    Files.write(temp, full);

    NodeJournal reopened = NodeJournal.open(dir);

    assertThat(reopened.all()).containsExactly(volume("good"));
    assertThat(reopened.get("truncated")).isEmpty();
    assertThat(warnings).hasSize(4);
    assertThat(warnings.stream().map(LogRecord::getMessage))
        .anySatisfy(m -> assertThat(m).contains(journal.file("empty").toString()))
        .anySatisfy(m -> assertThat(m).contains(journal.file("truncated").toString()))
        .anySatisfy(m -> assertThat(m).contains(journal.file("garbled").toString()))
        .anySatisfy(m -> assertThat(m).contains(journal.file("zeros").toString()));
    assertThat(temp).doesNotExist();
    for (String id : List.of("empty", "truncated", "garbled", "zeros")) {
      Path file = journal.file(id);
      assertThat(file).exists();
      assertThat(reopened.unreadable(id)).extracting(NodeJournal.Unreadable::file).containsExactly(file);
      assertThat(reopened.usage().of(id)).hasValueSatisfying(use -> {
        assertThat(use.unreadableRecord()).contains(file);
        assertThat(use.describe()).contains(file.toString());
      });
    }

    // the volume can be staged again; its unreadable record is neither overwritten nor removed
    Path unreadable = journal.file("truncated");
    byte[] torn = Files.readAllBytes(unreadable);
    reopened.put(volume("truncated"));
    assertThat(reopened.file("truncated")).isNotEqualTo(unreadable);
    reopened.remove("truncated");
    reopened.put(volume("truncated"));
    assertThat(Files.readAllBytes(unreadable)).isEqualTo(torn);
    NodeJournal again = NodeJournal.open(dir);
    assertThat(again.get("truncated")).contains(volume("truncated"));
    assertThat(again.unreadable("truncated")).extracting(NodeJournal.Unreadable::file).containsExactly(unreadable);
  }

  @Test
  void anOperatorMovingTheFileAwayDecides() throws Exception {
    NodeJournal journal = NodeJournal.open(dir);
    journal.put(volume("a"));
    Path file = journal.file("a");
    Files.write(file, new byte[0]);
    NodeJournal reopened = NodeJournal.open(dir);
    assertThat(reopened.usage().of("a")).isPresent();

    Files.move(file, dir.resolve(file.getFileName() + ".set-aside")); // a name the journal does not read

    assertThat(reopened.usage().of("a")).isEmpty();
    assertThat(reopened.unreadable()).isEmpty();
  }

  @Test
  void anUnreadableRecordWrittenBeforeThisBootIsStaleAndNotInUse() throws Exception {
    NodeJournal journal = NodeJournal.open(dir);
    journal.put(volume("a"));
    Files.write(journal.file("a"), new byte[0]);

    NodeJournal afterReboot = NodeJournal.open(dir, Instant.now().plusSeconds(3600));

    assertThat(afterReboot.unreadable("a")).singleElement().satisfies(u -> assertThat(u.stale()).isTrue());
    assertThat(afterReboot.usage().of("a")).isEmpty();
    assertThat(journal.file("a")).exists();
  }

  @Test
  void aRecordUnderAnotherVolumesNameIsTorn() throws Exception {
    NodeJournal journal = NodeJournal.open(dir);
    journal.put(volume("a"));
    Files.copy(journal.file("a"), journal.file("b"));

    assertThat(NodeJournal.open(dir).all()).containsExactly(volume("a"));
    assertThat(warnings).singleElement().satisfies(r -> assertThat(r.getMessage()).contains(journal.file("b").toString()));
    try (Stream<Path> files = Files.list(dir)) {
      assertThat(files).hasSize(2); // left in place for a person to look at
    }
    assertThat(NodeJournal.open(dir).usage().of("b")).isPresent();
  }

  private List<String> names() throws Exception {
    try (Stream<Path> files = Files.list(dir)) {
      return files.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  @Test
  void aWriteNeverReplacesAnExistingFileAndLeavesOneFilePerVolume() throws Exception {
    NodeJournal journal = NodeJournal.open(dir);
    journal.put(volume("a"));
    journal.put(volume("b"));
    for (int i = 0; i < 3; i++) {
      List<String> before = names();
      StagedVolume changed = volume("a").withTarget(new Published(Path.of("/target/x" + i), Path.of("/staging/a"), true));
      journal.put(changed);
      String written = journal.file("a").getFileName().toString();
      assertThat(before).as("the new record went to a name that did not exist").doesNotContain(written);
      assertThat(names()).hasSize(2).contains(written);
      assertThat(journal.readFromDisk("a")).contains(changed);
      assertThat(NodeJournal.open(dir).get("a")).contains(changed);
    }
    journal.remove("a");
    assertThat(names()).containsExactly(journal.file("b").getFileName().toString());
    assertThat(warnings).isEmpty();
  }

  @Test
  void aRecordWrittenByAnOlderPluginIsReadAndSupersededByTheNextWrite() throws Exception {
    StagedVolume old = volume("vol/1");
    Path legacy = dir.resolve("vol%2F1.staged"); // the name older plugins wrote, replaced in place
    Files.write(legacy, NodeJournal.encode(old));

    NodeJournal journal = NodeJournal.open(dir);
    assertThat(journal.all()).containsExactly(old);
    assertThat(journal.file("vol/1")).isEqualTo(legacy);
    assertThat(journal.readFromDisk("vol/1")).contains(old);

    StagedVolume changed = old.withTarget(new Published(Path.of("/target/2"), Path.of("/staging/vol/1"), false));
    journal.put(changed);
    assertThat(legacy).doesNotExist();
    assertThat(NodeJournal.open(dir).all()).containsExactly(changed);
    assertThat(warnings).isEmpty();
  }

  @Test
  void aCrashBetweenAWriteAndItsUnlinkKeepsTheNewerRecord() throws Exception {
    NodeJournal journal = NodeJournal.open(dir);
    StagedVolume first = volume("a");
    journal.put(first);
    Path older = journal.file("a");
    byte[] olderBytes = Files.readAllBytes(older);
    StagedVolume second = first.withTarget(new Published(Path.of("/target/b"), Path.of("/staging/a"), false));
    journal.put(second);
    Files.write(older, olderBytes); // as if killed after the rename, before the unlink

    NodeJournal reopened = NodeJournal.open(dir);
    assertThat(reopened.all()).containsExactly(second);
    assertThat(older).as("the superseded generation is removed at open").doesNotExist();
    assertThat(names()).containsExactly(journal.file("a").getFileName().toString());
    assertThat(warnings).isEmpty();
  }
}

package dev.caravan.csi.node;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.node.StagedVolume.Published;
import dev.caravan.csi.node.StagedVolume.Staging;
import dev.caravan.csi.support.PropertiesCodec;
import dev.caravan.storage.file.AtomicFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * What this node has staged and published, kept on the host (where {@link JournalPlace} says: a tmpfs
 * under {@code /run/caravan}, or the data directory) so that it survives a plugin crash: small
 * properties files, one current record per volume, without fsync.
 * That is enough: the page cache survives a plugin crash, kill or upgrade, which is what the journal
 * is for, while a power loss or kernel crash also removes every mount and loop device a record
 * describes. A record that cannot be read (empty, truncated, garbled, or naming another volume than
 * its file does) is never removed and never overwritten by the plugin: it may describe a stage or
 * publish that still exists, so the volume its file name names counts as in use ({@link #usage()})
 * until an operator moves the file away, unless the file was last written before this boot (then
 * every mount and device it could describe went with the reboot). {@code caravan inspect} names it.
 * The node engine writes a record <em>before</em> it changes the host
 * (intent first) and trims it after undoing a change, so a crash at any point leaves a record that
 * covers everything that may exist. Read once at start and reconciled with the mount table by
 * {@link NodeEngine#reconcile()}; afterwards the in-memory copy is authoritative (calls for one volume
 * are serialized by the services).
 *
 * <p><b>Records are never replaced in place.</b> Each write makes a new generation, {@code
 * <id>.<n>.staged} (written to a temporary name and renamed onto that new name), and only then
 * unlinks the previous generation. Renaming <em>over</em> an existing file makes ext4 (default
 * {@code auto_da_alloc}) start writeback of the new file's data and wait for it: measured here at
 * about four times the cost of the same write renamed onto a fresh name, on every publish and
 * unpublish, where the journal lies on a disk filesystem. A record written by an older plugin,
 * {@code <id>.staged}, is generation 0
 * and is read as it is; the first write after an upgrade supersedes it. At open the newest
 * generation of each volume wins and older ones (left by a crash between the rename and the
 * unlink) are removed.
 */
public final class NodeJournal {
  private static final System.Logger LOG = System.getLogger(NodeJournal.class.getName());
  private static final String SUFFIX = ".staged";

  private final Path dir;
  private final Map<String, StagedVolume> entries = new ConcurrentHashMap<>();
  /** Per volume id: its newest generation on disk and every file of it there, newest last. */
  private final Map<String, RecordFiles> files = new ConcurrentHashMap<>();
  /** Per volume id (from the file name): its record files that cannot be read, newest last. */
  private final Map<String, RecordFiles> unreadable = new ConcurrentHashMap<>();
  private final Instant bootTime;

  /**
   * A record file that cannot be read, kept as it is.
   *
   * @param volumeId the volume its file name names
   * @param bytes its size; -1 when it cannot even be looked at
   * @param stale last written before this boot: nothing it describes can exist any more
   */
  public record Unreadable(String volumeId, Path file, long bytes, boolean stale) {}

  /** The files of one volume's record: the newest generation number and the files, newest last. */
  private record RecordFiles(long generation, List<Path> paths) {
    RecordFiles {
      paths = List.copyOf(paths);
    }

    Path current() {
      return paths.getLast();
    }
  }

  /** A record file's name taken apart: the encoded volume id and the generation. */
  private record Name(String encodedId, long generation) {
    static Optional<Name> of(String fileName) {
      if (!fileName.endsWith(SUFFIX) || fileName.startsWith(".")) {
        return Optional.empty();
      }
      String stem = fileName.substring(0, fileName.length() - SUFFIX.length());
      int dot = stem.indexOf('.');
      if (dot < 0) {
        return Optional.of(new Name(stem, 0)); // written by an older plugin
      }
      try {
        long generation = Long.parseLong(stem.substring(dot + 1));
        return generation > 0 ? Optional.of(new Name(stem.substring(0, dot), generation)) : Optional.empty();
      } catch (NumberFormatException e) {
        return Optional.empty();
      }
    }
  }

  private NodeJournal(Path dir, Instant bootTime) {
    this.dir = dir;
    this.bootTime = bootTime;
  }

  public static NodeJournal open(Path dir) {
    return open(dir, BootTime.get());
  }

  /** As {@link #open(Path)}, with records last written before {@code bootTime} counted as stale. */
  static NodeJournal open(Path dir, Instant bootTime) {
    NodeJournal journal = new NodeJournal(dir, bootTime);
    try {
      Files.createDirectories(dir);
      Map<String, NavigableMap<Long, Path>> byVolume = new HashMap<>();
      try (Stream<Path> list = Files.list(dir)) {
        for (Path f : (Iterable<Path>) list::iterator) {
          String name = f.getFileName().toString();
          Optional<Name> parsed = Name.of(name);
          if (parsed.isPresent()) {
            byVolume.computeIfAbsent(parsed.get().encodedId(), k -> new TreeMap<>())
                .put(parsed.get().generation(), f);
          } else if (name.startsWith(".") && name.contains(SUFFIX + ".tmp-")) {
            Files.deleteIfExists(f); // a write cut short by a crash
          }
        }
      }
      for (Map.Entry<String, NavigableMap<Long, Path>> e : byVolume.entrySet()) {
        journal.load(e.getKey(), e.getValue());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the node journal in " + dir, e);
    }
    return journal;
  }

  /**
   * Loads the newest generation of one volume's record and removes the older readable ones it
   * supersedes (left by a crash between a write and its unlink). A generation that cannot be read
   * is kept, and remembered; when the newest cannot be read, nothing of the volume is loaded.
   */
  private void load(String encodedId, NavigableMap<Long, Path> generations) throws IOException {
    Map.Entry<Long, Path> newest = generations.lastEntry();
    Optional<StagedVolume> v = read(encodedId, newest.getValue());
    List<Path> unread = new ArrayList<>();
    if (v.isEmpty()) {
      unread.addAll(generations.values());
    } else {
      for (Path older : generations.headMap(newest.getKey()).values()) {
        if (read(encodedId, older).isPresent()) {
          Files.deleteIfExists(older); // superseded
        } else {
          unread.add(older);
        }
      }
      files.put(v.get().volumeId(), new RecordFiles(newest.getKey(), List.of(newest.getValue())));
      entries.put(v.get().volumeId(), v.get());
    }
    if (!unread.isEmpty()) {
      String id = v.map(StagedVolume::volumeId).orElseGet(() -> idOf(encodedId));
      for (Path f : unread) {
        LOG.log(System.Logger.Level.WARNING,
            "the node journal record " + f + " cannot be read; kept, and volume " + id + " counts as in use on"
                + " this node until the file is moved away (caravan inspect " + id + " says more)");
      }
      // two spellings of one id (an escape of a plain character, which no plugin writes) share an entry
      unreadable.merge(id, new RecordFiles(newest.getKey(), unread),
          (a, b) -> new RecordFiles(Math.max(a.generation(), b.generation()),
              Stream.concat(a.paths().stream(), b.paths().stream()).toList()));
    }
  }

  /** The record in file {@code f}, if it can be read and names the volume its file name names. */
  private static Optional<StagedVolume> read(String encodedId, Path f) throws IOException {
    return parse(Files.readAllBytes(f)).filter(r -> stem(r.volumeId()).equals(encodedId));
  }

  /** The record in {@code bytes}; empty when it is empty, truncated or garbled. */
  static Optional<StagedVolume> parse(byte[] bytes) {
    try {
      StagedVolume v = decode(bytes);
      return v.volumeId() == null || v.volumeId().isEmpty() ? Optional.empty() : Optional.of(v);
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  public Path dir() {
    return dir;
  }

  public Optional<StagedVolume> get(String volumeId) {
    return Optional.ofNullable(entries.get(volumeId));
  }

  /**
   * This journal's records as the backends see them: what this node has staged and published, and
   * for a volume whose record cannot be read (and is not stale), that record.
   */
  public NodeUsage usage() {
    return volumeId -> get(volumeId)
        .map(v -> new NodeUsage.Use(
            v.accessType(), v.device(), v.stagingPaths(), v.targets().stream().map(Published::target).toList()))
        .or(() -> unreadable(volumeId).stream().filter(u -> !u.stale()).findFirst()
            .map(u -> NodeUsage.Use.unreadableRecord(u.file())));
  }

  /**
   * The volume's record files that cannot be read and are still there (an operator may have moved
   * them away since), newest first.
   */
  public List<Unreadable> unreadable(String volumeId) {
    RecordFiles f = unreadable.get(volumeId);
    return f == null ? List.of() : describe(volumeId, f);
  }

  /** Every record file that cannot be read and is still there. */
  public List<Unreadable> unreadable() {
    List<Unreadable> all = new ArrayList<>();
    unreadable.forEach((id, f) -> all.addAll(describe(id, f)));
    return all;
  }

  private List<Unreadable> describe(String volumeId, RecordFiles f) {
    List<Unreadable> found = new ArrayList<>();
    for (Path p : f.paths().reversed()) {
      try {
        boolean stale = Files.getLastModifiedTime(p).toInstant().isBefore(bootTime);
        found.add(new Unreadable(volumeId, p, Files.size(p), stale));
      } catch (NoSuchFileException e) {
        // moved away: decided
      } catch (IOException e) {
        found.add(new Unreadable(volumeId, p, -1, false)); // cannot even be looked at: still in use
      }
    }
    return found;
  }

  public Collection<StagedVolume> all() {
    return List.copyOf(entries.values());
  }

  /**
   * Writes {@code v} as the volume's record: a new generation, then the previous one unlinked (see
   * the class comment for why never over it). A crash in between leaves both; the next open keeps
   * the newer.
   */
  public void put(StagedVolume v) {
    String id = v.volumeId();
    RecordFiles before = files.get(id);
    RecordFiles kept = unreadable.get(id);
    // past every generation on disk: a name an unreadable record holds is never written over
    long generation = Math.max(before == null ? 0 : before.generation(), kept == null ? 0 : kept.generation()) + 1;
    Path next = file(id, generation);
    AtomicFiles.replace(next, encode(v)); // onto a name that does not exist: nothing is replaced
    files.put(id, new RecordFiles(generation, List.of(next)));
    entries.put(id, v);
    if (before != null) {
      unlink(id, before.paths());
    }
  }

  public void remove(String volumeId) {
    RecordFiles before = files.remove(volumeId);
    entries.remove(volumeId);
    if (before != null) {
      unlink(volumeId, before.paths());
    }
  }

  private static void unlink(String volumeId, List<Path> paths) {
    try {
      for (Path p : paths) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove an old journal record of " + volumeId, e);
    }
  }

  /**
   * The record as it is on disk now, read afresh (the inspector compares it with the in-memory copy);
   * empty if there is no file.
   */
  public Optional<StagedVolume> readFromDisk(String volumeId) {
    try {
      return Optional.of(decode(Files.readAllBytes(file(volumeId))));
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the journal record of " + volumeId, e);
    }
  }

  /**
   * The file holding a volume's current record, or for a volume without one the file its first
   * record will be written to.
   */
  public Path file(String volumeId) {
    RecordFiles f = files.get(volumeId);
    if (f != null) {
      return f.current();
    }
    RecordFiles kept = unreadable.get(volumeId);
    return file(volumeId, kept == null ? 1 : kept.generation() + 1);
  }

  private Path file(String volumeId, long generation) {
    return dir.resolve(stem(volumeId) + "." + generation + SUFFIX);
  }

  /** A volume id as a file name: anything outside [A-Za-z0-9_-] is percent-encoded, so no id escapes the directory. */
  private static String stem(String volumeId) {
    StringBuilder name = new StringBuilder();
    for (byte b : volumeId.getBytes(StandardCharsets.UTF_8)) {
      char c = (char) (b & 0xff);
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
        name.append(c);
      } else {
        name.append('%').append(String.format("%02X", b & 0xff));
      }
    }
    return name.toString();
  }

  /** The inverse of {@link #stem}; a malformed escape (a name no plugin wrote) is kept as it is. */
  private static String idOf(String encoded) {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    for (int i = 0; i < encoded.length(); i++) {
      char c = encoded.charAt(i);
      if (c == '%' && i + 2 < encoded.length() && HexFormat.isHexDigit(encoded.charAt(i + 1))
          && HexFormat.isHexDigit(encoded.charAt(i + 2))) {
        bytes.write(HexFormat.fromHexDigits(encoded, i + 1, i + 3));
        i += 2;
      } else {
        bytes.write(c);
      }
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  static byte[] encode(StagedVolume v) {
    Properties p = new Properties();
    p.setProperty("volumeId", v.volumeId());
    p.setProperty("accessType", v.accessType().name());
    p.setProperty("fsType", v.fsType());
    p.setProperty("mountFlags", String.join(",", v.mountFlags()));
    v.device().ifPresent(d -> p.setProperty("device", d.toString()));
    v.context().forEach((k, val) -> p.setProperty("context." + k, val));
    for (int i = 0; i < v.stagings().size(); i++) {
      Staging s = v.stagings().get(i);
      String key = "staging." + i;
      p.setProperty(key, s.path().toString());
      s.mode().ifPresent(m -> p.setProperty(key + ".mode", m.name()));
      p.setProperty(key + ".mountFlags", String.join(",", s.mountFlags()));
      p.setProperty(key + ".complete", Boolean.toString(s.complete()));
      v.mountId(s.path()).ifPresent(id -> p.setProperty(key + ".mountId", Integer.toString(id)));
    }
    for (int i = 0; i < v.targets().size(); i++) {
      Published t = v.targets().get(i);
      String key = "target." + i;
      p.setProperty(key + ".path", t.target().toString());
      p.setProperty(key + ".staging", t.stagingPath().toString());
      p.setProperty(key + ".readOnly", Boolean.toString(t.readOnly()));
      t.mode().ifPresent(m -> p.setProperty(key + ".mode", m.name()));
      p.setProperty(key + ".mountFlags", String.join(",", t.mountFlags()));
      v.mountId(t.target()).ifPresent(id -> p.setProperty(key + ".mountId", Integer.toString(id)));
    }
    return PropertiesCodec.encode(p, "caravan node journal");
  }

  /**
   * Reads a record. Keys added later have defaults that read older records as they were meant: no
   * mode (unknown), the volume's mount flags for each staging, and a staging counts as complete when
   * the device is recorded (older engines recorded it after every step).
   */
  static StagedVolume decode(byte[] bytes) {
    Properties p = PropertiesCodec.decode(bytes);
    Map<String, String> context = PropertiesCodec.withPrefix(p, "context.");
    String device = p.getProperty("device");
    String volumeFlags = p.getProperty("mountFlags", "");
    List<Staging> stagings = new ArrayList<>();
    Map<Path, Integer> mountIds = new HashMap<>();
    for (int i = 0; p.getProperty("staging." + i) != null; i++) {
      Path stagingPath = Path.of(p.getProperty("staging." + i));
      mountId(p, "staging." + i).ifPresent(id -> mountIds.put(stagingPath, id));
      String complete = p.getProperty("staging." + i + ".complete");
      stagings.add(new Staging(
          Path.of(p.getProperty("staging." + i)),
          mode(p.getProperty("staging." + i + ".mode")),
          flags(p.getProperty("staging." + i + ".mountFlags", volumeFlags)),
          complete == null ? device != null : Boolean.parseBoolean(complete)));
    }
    List<Published> targets = new ArrayList<>();
    for (int i = 0; p.getProperty("target." + i + ".path") != null; i++) {
      Path targetPath = Path.of(p.getProperty("target." + i + ".path"));
      mountId(p, "target." + i).ifPresent(id -> mountIds.put(targetPath, id));
      targets.add(new Published(
          Path.of(p.getProperty("target." + i + ".path")),
          Path.of(p.getProperty("target." + i + ".staging")),
          Boolean.parseBoolean(p.getProperty("target." + i + ".readOnly")),
          mode(p.getProperty("target." + i + ".mode")),
          flags(p.getProperty("target." + i + ".mountFlags", ""))));
    }
    return new StagedVolume(
        p.getProperty("volumeId"),
        context,
        AccessType.valueOf(p.getProperty("accessType")),
        p.getProperty("fsType", ""),
        device == null ? Optional.empty() : Optional.of(Path.of(device)),
        stagings,
        targets,
        mountIds);
  }

  /** The mount id recorded under {@code key}; empty in records written before ids were kept. */
  private static Optional<Integer> mountId(Properties p, String key) {
    String id = p.getProperty(key + ".mountId");
    return id == null ? Optional.empty() : Optional.of(Integer.parseInt(id));
  }

  private static Optional<AccessMode> mode(String name) {
    return name == null ? Optional.empty() : Optional.of(AccessMode.valueOf(name));
  }

  private static List<String> flags(String joined) {
    return joined.isEmpty() ? List.of() : List.of(joined.split(","));
  }
}

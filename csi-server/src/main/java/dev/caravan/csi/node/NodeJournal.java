package dev.caravan.csi.node;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.node.StagedVolume.Published;
import dev.caravan.csi.node.StagedVolume.Staging;
import dev.caravan.storage.file.AtomicFiles;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * What this node has staged and published, kept on the host (under the data directory) so that it
 * survives a plugin crash: one small properties file per volume, each replaced atomically by a
 * write and a rename ({@link AtomicFiles#replace}), without fsync. That is enough: the page cache
 * survives a plugin crash, kill or upgrade, which is what the journal is for, while a power loss or
 * kernel crash also removes every mount and loop device a record describes. A record torn by such a
 * crash (empty, truncated or garbled) is therefore read as absent, with a warning. The node engine
 * writes a record <em>before</em> it changes the host (intent first) and trims it after undoing a
 * change, so a crash at any point leaves a record that covers everything that may exist. Read once at start and reconciled with the mount table by
 * {@link NodeEngine#reconcile()}; afterwards the in-memory copy is authoritative (calls for one volume
 * are serialized by the services).
 */
public final class NodeJournal {
  private static final System.Logger LOG = System.getLogger(NodeJournal.class.getName());
  private static final String SUFFIX = ".staged";

  private final Path dir;
  private final Map<String, StagedVolume> entries = new ConcurrentHashMap<>();

  private NodeJournal(Path dir) {
    this.dir = dir;
  }

  public static NodeJournal open(Path dir) {
    NodeJournal journal = new NodeJournal(dir);
    try {
      Files.createDirectories(dir);
      try (Stream<Path> files = Files.list(dir)) {
        for (Path f : (Iterable<Path>) files::iterator) {
          String name = f.getFileName().toString();
          if (name.endsWith(SUFFIX)) {
            journal.load(f);
          } else if (name.startsWith(".") && name.contains(SUFFIX + ".tmp-")) {
            Files.deleteIfExists(f); // a replace cut short by a crash
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the node journal in " + dir, e);
    }
    return journal;
  }

  private void load(Path f) throws IOException {
    byte[] bytes = Files.readAllBytes(f);
    Optional<StagedVolume> v = parse(bytes).filter(r -> file(r.volumeId()).equals(f));
    if (v.isEmpty()) {
      LOG.log(System.Logger.Level.WARNING,
          "ignoring the unreadable node journal record " + f + " (" + bytes.length + " bytes): torn by a power"
              + " loss or kernel crash, which also removed the mounts and devices it described");
      return;
    }
    entries.put(v.get().volumeId(), v.get());
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

  /** This journal's records as the backends see them: what this node has staged and published. */
  public NodeUsage usage() {
    return volumeId -> get(volumeId).map(v -> new NodeUsage.Use(
        v.accessType(), v.device(), v.stagingPaths(), v.targets().stream().map(Published::target).toList()));
  }

  public Collection<StagedVolume> all() {
    return List.copyOf(entries.values());
  }

  public void put(StagedVolume v) {
    AtomicFiles.replace(file(v.volumeId()), encode(v));
    entries.put(v.volumeId(), v);
  }

  public void remove(String volumeId) {
    try {
      Files.deleteIfExists(file(volumeId));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove the journal record of " + volumeId, e);
    }
    entries.remove(volumeId);
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

  /** File name for a volume id: anything outside [A-Za-z0-9_-] is percent-encoded, so no id escapes the directory. */
  public Path file(String volumeId) {
    StringBuilder name = new StringBuilder();
    for (byte b : volumeId.getBytes(StandardCharsets.UTF_8)) {
      char c = (char) (b & 0xff);
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
        name.append(c);
      } else {
        name.append('%').append(String.format("%02X", b & 0xff));
      }
    }
    return dir.resolve(name + SUFFIX);
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
    }
    for (int i = 0; i < v.targets().size(); i++) {
      Published t = v.targets().get(i);
      String key = "target." + i;
      p.setProperty(key + ".path", t.target().toString());
      p.setProperty(key + ".staging", t.stagingPath().toString());
      p.setProperty(key + ".readOnly", Boolean.toString(t.readOnly()));
      t.mode().ifPresent(m -> p.setProperty(key + ".mode", m.name()));
      p.setProperty(key + ".mountFlags", String.join(",", t.mountFlags()));
    }
    StringWriter w = new StringWriter();
    try {
      p.store(w, "caravan node journal");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return w.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Reads a record. Keys added later have defaults that read older records as they were meant: no
   * mode (unknown), the volume's mount flags for each staging, and a staging counts as complete when
   * the device is recorded (older engines recorded it after every step).
   */
  static StagedVolume decode(byte[] bytes) {
    Properties p = new Properties();
    try {
      p.load(new StringReader(new String(bytes, StandardCharsets.UTF_8)));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Map<String, String> context = new HashMap<>();
    for (String key : p.stringPropertyNames()) {
      if (key.startsWith("context.")) {
        context.put(key.substring("context.".length()), p.getProperty(key));
      }
    }
    String device = p.getProperty("device");
    String volumeFlags = p.getProperty("mountFlags", "");
    List<Staging> stagings = new ArrayList<>();
    for (int i = 0; p.getProperty("staging." + i) != null; i++) {
      String complete = p.getProperty("staging." + i + ".complete");
      stagings.add(new Staging(
          Path.of(p.getProperty("staging." + i)),
          mode(p.getProperty("staging." + i + ".mode")),
          flags(p.getProperty("staging." + i + ".mountFlags", volumeFlags)),
          complete == null ? device != null : Boolean.parseBoolean(complete)));
    }
    List<Published> targets = new ArrayList<>();
    for (int i = 0; p.getProperty("target." + i + ".path") != null; i++) {
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
        targets);
  }

  private static Optional<AccessMode> mode(String name) {
    return name == null ? Optional.empty() : Optional.of(AccessMode.valueOf(name));
  }

  private static List<String> flags(String joined) {
    return joined.isEmpty() ? List.of() : List.of(joined.split(","));
  }
}

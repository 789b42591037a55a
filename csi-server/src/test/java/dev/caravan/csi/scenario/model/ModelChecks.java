package dev.caravan.csi.scenario.model;

import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.testing.Bytes;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The invariants a model run checks after every step, against the host itself (the mount table,
 * loop devices, the node journal, the backend's storage) and the plugin's lists: no data lost, no
 * second writer, and the host exactly as the model says, with nothing outside the allowed roots.
 */
final class ModelChecks {
  private final ModelDriver d;

  ModelChecks(ModelDriver d) {
    this.d = d;
  }

  void all() throws IOException {
    List<MountEntry> table = MountTable.read();
    mountsAreTheModels(table);
    noSecondWriter(table);
    nothingOutside(table);
    devicesAndJournal();
    keysAreTheModels();
    listsAreTheModels();
    publishedDataIsIntact();
  }

  /**
   * The key of an encrypted volume is open on the node exactly while it is staged: a loaded ZFS key, an
   * open LUKS2 mapping. A refused stage (wrong or missing passphrase) opened nothing, an unstage
   * closed what its stage opened, and CreateVolume (of a copy too) left no key loaded.
   */
  private void keysAreTheModels() throws IOException {
    Set<String> open = d.f.backend.volumesWithOpenKeys(d.f.work);
    if (!open.equals(d.m.openKeys())) {
      throw new ModelFailure("host matches the model", "keys open on the node for " + open
          + ", the model's staged encrypted volumes are " + d.m.openKeys());
    }
  }

  /**
   * No passphrase of the run in any file the plugin wrote under the run's directory (records, journal,
   * logs); volume images larger than {@value #LARGEST_SCANNED} bytes, which hold a volume's blocks and
   * no file of the plugin's, are not read.
   */
  private void noPassphraseInFiles() throws IOException {
    List<byte[]> needles = ModelDriver.passphrases().stream().map(p -> p.getBytes(StandardCharsets.UTF_8)).toList();
    List<Path> holding = new ArrayList<>();
    try (Stream<Path> s = Files.walk(d.f.work)) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        if (Files.size(p) <= LARGEST_SCANNED) {
          byte[] bytes = Files.readAllBytes(p);
          if (needles.stream().anyMatch(n -> Bytes.contains(bytes, n))) {
            holding.add(p);
          }
        }
      }
    }
    if (!holding.isEmpty()) {
      throw new ModelFailure("no secret in a file", "a passphrase is written in " + holding);
    }
  }

  private static final long LARGEST_SCANNED = 8L << 20;

  /** Every mount under the fixture is one the model holds (a staging path, a target, a DHV volume), and each is there, ro or rw as published. */
  private void mountsAreTheModels(List<MountEntry> table) throws IOException {
    Map<Path, String> expected = new TreeMap<>();
    for (ModelState.Vol v : d.m.volumes.values()) {
      if (v.staged && !v.block) {
        expected.put(d.staging(v.name), "staging of " + v.name);
      }
      for (Map.Entry<Integer, Boolean> t : v.targets.entrySet()) {
        expected.put(d.target(v, t.getKey()), (t.getValue() ? "ro" : "rw") + " target t" + t.getKey() + " of " + v.name);
      }
    }
    for (String dhv : d.m.dhv) {
      expected.put(d.dhvPath(dhv), "DHV volume " + dhv);
    }
    Map<Path, MountEntry> actual = new TreeMap<>();
    for (MountEntry e : table) {
      if (e.mountPoint().startsWith(d.f.work)) {
        if (actual.put(e.mountPoint(), e) != null) {
          throw new ModelFailure("host matches the model", "two mounts stacked at " + e.mountPoint());
        }
      }
    }
    if (!actual.keySet().equals(expected.keySet())) {
      Set<Path> extra = new TreeSet<>(actual.keySet());
      extra.removeAll(expected.keySet());
      Set<Path> missing = new TreeSet<>(expected.keySet());
      missing.removeAll(actual.keySet());
      throw new ModelFailure("host matches the model", "mounts not in the model: " + extra
          + "; in the model but not mounted: " + missing.stream().map(p -> p + " (" + expected.get(p) + ")").toList());
    }
    for (ModelState.Vol v : d.m.volumes.values()) {
      for (Map.Entry<Integer, Boolean> t : v.targets.entrySet()) {
        MountEntry e = actual.get(d.target(v, t.getKey()));
        if (e.readOnly() != t.getValue()) {
          throw new ModelFailure("host matches the model", "target t" + t.getKey() + " of " + v.name + " is mounted "
              + (e.readOnly() ? "read-only" : "read-write") + ", published " + (t.getValue() ? "read-only" : "read-write"));
        }
      }
    }
  }

  /**
   * From the mount table alone: a device mounted read-write at two publish targets belongs to one
   * volume, and not to a SINGLE_NODE_SINGLE_WRITER one. A block target is a bind of the device node
   * (its root names it).
   */
  private void noSecondWriter(List<MountEntry> table) throws IOException {
    Path targets = d.f.root.resolve("per-alloc");
    Map<String, List<Path>> writers = new HashMap<>();
    for (MountEntry e : table) {
      if (e.mountPoint().startsWith(targets) && !e.readOnly()) {
        String device = "devtmpfs".equals(e.fsType()) ? "node " + e.root() : e.majorMinor();
        writers.computeIfAbsent(device, k -> new ArrayList<>()).add(e.mountPoint());
      }
    }
    for (Map.Entry<String, List<Path>> w : writers.entrySet()) {
      if (w.getValue().size() < 2) {
        continue;
      }
      Set<String> owners = new TreeSet<>();
      for (Path p : w.getValue()) {
        owners.add(p.getParent().getFileName().toString().replaceFirst("-t[0-9]+$", ""));
      }
      ModelState.Vol v = owners.size() == 1 ? d.m.volumes.get(owners.iterator().next()) : null;
      if (v == null || v.mode == ModelState.SOLE_WRITER) {
        throw new ModelFailure("no second writer", "device " + w.getKey() + " is mounted read-write at "
            + w.getValue() + " (volumes " + owners + ")");
      }
    }
  }

  /** Nothing a bad request named outside the allowed roots exists or is mounted, and the fixture's mounts are under its roots. */
  private void nothingOutside(List<MountEntry> table) throws IOException {
    try (Stream<Path> s = Files.list(d.outside)) {
      List<Path> made = s.toList();
      if (!made.isEmpty()) {
        throw new ModelFailure("nothing outside the allowed roots", "created outside every root: " + made);
      }
    }
    for (MountEntry e : table) {
      Path p = e.mountPoint();
      if (p.startsWith(d.outside) || (p.startsWith(d.f.work) && !p.startsWith(d.f.root)
          && !p.startsWith(d.dhvVolumesDir()))) {
        throw new ModelFailure("nothing outside the allowed roots", "mounted at " + p);
      }
    }
  }

  /**
   * Loop devices (file backend): one per staged volume and DHV volume. Node journal records: one per
   * staged volume in the plugin's journal, one per DHV volume in the DHV plugin's journals. None leaked.
   */
  private void devicesAndJournal() throws IOException {
    long staged = d.m.stagedCount();
    if (d.f.backend.driver().equals("file")) {
      long loops = d.f.ourLoops().size();
      if (loops != staged + d.m.dhv.size()) {
        throw new ModelFailure("host matches the model", loops + " loop devices on the data directory, "
            + staged + " staged volumes and " + d.m.dhv.size() + " DHV volumes: " + d.f.ourLoops());
      }
    }
    Set<String> records = journalRecords(d.f.settings().journalDir());
    if (records.size() != staged) {
      throw new ModelFailure("host matches the model", records.size() + " node journal records, " + staged
          + " staged volumes: " + records);
    }
    Set<String> dhv = new TreeSet<>();
    Path nodes = d.f.data.resolve("dhv/nodes");
    if (Files.isDirectory(nodes)) {
      try (Stream<Path> s = Files.walk(nodes, 2)) {
        for (Path journal : s.filter(p -> p.getFileName().toString().equals("journal")).toList()) {
          dhv.addAll(journalRecords(journal));
        }
      }
    }
    if (dhv.size() != d.m.dhv.size()) {
      throw new ModelFailure("host matches the model", dhv.size() + " DHV journal records, " + d.m.dhv.size()
          + " DHV volumes: " + dhv);
    }
  }

  /** The volumes a node journal directory holds records of (below it, at any depth). */
  private static Set<String> journalRecords(Path journal) throws IOException {
    Set<String> records = new TreeSet<>();
    if (Files.isDirectory(journal)) {
      try (Stream<Path> s = Files.walk(journal)) {
        s.filter(Files::isRegularFile).map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".staged"))
            .map(n -> n.substring(0, n.length() - ".staged".length()).replaceFirst("\\.[0-9]+$", ""))
            .forEach(records::add);
      }
    }
    return records;
  }

  /** The plugin lists exactly the model's volumes and snapshots (DHV volumes aside), each as large as the model says, and the storage has them. */
  private void listsAreTheModels() throws IOException {
    Map<String, Long> listed = new TreeMap<>();
    d.f.controller.withDeadlineAfter(120, TimeUnit.SECONDS).listVolumes(ListVolumesRequest.getDefaultInstance())
        .getEntriesList().forEach(e -> listed.put(e.getVolume().getVolumeId(), e.getVolume().getCapacityBytes()));
    Set<String> ids = d.m.volumes.values().stream().map(v -> v.id).collect(Collectors.toCollection(TreeSet::new));
    Set<String> csi = new TreeSet<>(listed.keySet());
    if (!d.m.dhv.isEmpty()) {
      csi.removeIf(id -> !ids.contains(id) && isDhv(id));
    }
    if (!csi.equals(ids)) {
      throw new ModelFailure("host matches the model", "ListVolumes has " + csi + ", the model " + ids);
    }
    for (ModelState.Vol v : d.m.volumes.values()) {
      long stored = d.f.backend.storedSize(d.f.work, v.id);
      if (listed.get(v.id) < v.bytes || stored < v.bytes) {
        throw new ModelFailure("host matches the model", v.name + " lists " + listed.get(v.id) + " bytes, its storage "
            + stored + ", the model " + v.bytes);
      }
    }
    Set<String> snaps = d.f.controller.withDeadlineAfter(120, TimeUnit.SECONDS)
        .listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList().stream()
        .map(e -> e.getSnapshot().getSnapshotId()).collect(Collectors.toCollection(TreeSet::new));
    Set<String> model = d.m.snapshots.values().stream().map(ModelState.Snap::id).collect(Collectors.toCollection(TreeSet::new));
    if (!snaps.equals(model)) {
      throw new ModelFailure("host matches the model", "ListSnapshots has " + snaps + ", the model " + model);
    }
  }

  private boolean isDhv(String id) {
    return d.m.dhv.stream().anyMatch(n -> id.contains(d.dhvPath(n).getFileName().toString()));
  }

  /** Every published volume reads back every record the model says was fsynced. */
  private void publishedDataIsIntact() throws IOException {
    for (ModelState.Vol v : d.m.volumes.values()) {
      if (!v.targets.isEmpty()) {
        for (int t : v.targets.keySet()) {
          d.expectRecords(v, ModelDriver.logAt(d.target(v, t), v.block));
        }
      } else if (v.staged && !v.block) {
        d.expectRecords(v, ModelDriver.logAt(d.staging(v.name), false));
      }
    }
  }

  /** After the tear-down: nothing of the run is left on the host or in the storage. */
  void nothingLeft() throws IOException {
    if (!d.f.ourMounts().isEmpty() || !d.f.ourLoops().isEmpty()) {
      throw new ModelFailure("nothing leaked", "left after tear-down: " + d.f.ourMounts() + " " + d.f.ourLoops());
    }
    // The DHV plugin's lock files stay by design (DhvStore#lock): removing one would let a waiter lock a
    // file nobody else opens any more. They hold no data.
    Set<String> objects = new TreeSet<>(d.f.storageObjects());
    objects.removeIf(o -> o.startsWith("dhv/locks/"));
    if (!objects.isEmpty()) {
      throw new ModelFailure("nothing leaked", "storage objects left after every volume and snapshot was deleted: "
          + objects);
    }
    devicesAndJournal();
    keysAreTheModels();
    noPassphraseInFiles();
  }
}

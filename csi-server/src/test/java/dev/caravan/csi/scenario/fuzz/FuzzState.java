package dev.caravan.csi.scenario.fuzz;

import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.storage.mount.MountEntry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * What a request may not change, as seen without the plugin's help where possible: the mounts in the
 * plugin's mount namespace, every file and directory under its mount root, its data directory
 * (journal contents included) and the decoys, the paths that must stay absent, what ListVolumes and
 * ListSnapshots answer and, in a full reading, the backend's storage objects and
 * attached devices (slower to read: every loop device, or a {@code zfs list}).
 */
record FuzzState(Set<String> mounts, Set<String> files, Set<String> listed, Set<String> storage, Set<String> devices) {

  static FuzzState read(FuzzWorld w, FuzzPlugin plugin, boolean full) throws IOException {
    Set<String> mounts = new TreeSet<>();
    for (MountEntry m : plugin.mounts()) {
      mounts.add(m.mountPoint() + " <- " + m.source() + " " + m.fsType() + (m.readOnly() ? " ro" : " rw"));
    }
    Set<String> files = new TreeSet<>();
    walk(w.f.root, files, false);
    walk(w.f.data, files, true);
    walk(w.decoy, files, false);
    for (Path p : w.mustStayAbsent) {
      if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
        files.add("EXISTS " + p);
      }
    }
    Set<String> listed = new TreeSet<>();
    w.f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList()
        .forEach(e -> listed.add("volume " + e.getVolume().getVolumeId() + " " + e.getVolume().getCapacityBytes()));
    w.f.controller.listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList()
        .forEach(e -> listed.add("snapshot " + e.getSnapshot().getSnapshotId()));
    Set<String> storage = full ? w.f.storageObjects() : Set.of();
    Set<String> devices = full ? w.f.backend.attachedDevices(w.f.work) : Set.of();
    return new FuzzState(mounts, files, listed, storage, devices);
  }

  /** Every entry (path, type, size; a hash of the content where {@code contents}) below {@code root}. */
  private static void walk(Path root, Set<String> out, boolean contents) throws IOException {
    List<Path> paths;
    try (Stream<Path> s = Files.walk(root)) {
      paths = s.toList();
    } catch (UncheckedIOException e) {
      if (e.getCause() instanceof NoSuchFileException) {
        out.add("VANISHING " + root);
        return;
      }
      throw e;
    }
    for (Path p : paths) {
      if (Files.isSymbolicLink(p)) {
        out.add(p + " -> " + Files.readSymbolicLink(p));
      } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
        out.add(p + "/");
      } else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
        out.add(p + (contents && Files.size(p) < (1 << 20) ? " " + sha256(p) : " " + Files.size(p)));
      } else {
        out.add(p + " (special)");
      }
    }
  }

  /** A hash of the file's lines, less comments (the journal's properties files carry the time they were written). */
  private static String sha256(Path file) throws IOException {
    String meaning;
    try {
      meaning = String.join("\n", Files.readAllLines(file).stream().filter(l -> !l.startsWith("#")).sorted().toList());
    } catch (java.nio.charset.MalformedInputException e) {
      meaning = HexFormat.of().formatHex(Files.readAllBytes(file));
    }
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(
          meaning.getBytes(java.nio.charset.StandardCharsets.UTF_8)), 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** What differs from {@code before}, in plain words; empty when nothing does. */
  List<String> changesSince(FuzzState before, boolean full) {
    List<String> changes = new ArrayList<>();
    diff("mount", before.mounts, mounts, changes);
    diff("file", before.files, files, changes);
    diff("listed", before.listed, listed, changes);
    if (full) {
      diff("storage object", before.storage, storage, changes);
      diff("attached device", before.devices, devices, changes);
    }
    return changes;
  }

  private static void diff(String what, Set<String> before, Set<String> after, List<String> out) {
    Set<String> gone = new TreeSet<>(before);
    gone.removeAll(after);
    Set<String> added = new TreeSet<>(after);
    added.removeAll(before);
    out.addAll(gone.stream().map(s -> what + " gone: " + s).collect(Collectors.toList()));
    out.addAll(added.stream().map(s -> what + " appeared: " + s).collect(Collectors.toList()));
  }
}

package dev.caravan.csi.backend.qnap;

import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The guest's data path behind a {@link QnapSimulator}: what the simulated appliance promises, built
 * as real LIO targets through configfs (as targetcli would, without Python). Each LUN is a sparse file
 * on a loop device under a fileio backstore (so that a grown LUN grows on the wire: LIO reads a block
 * device's size afresh, a plain file's never), its unit serial the 25 hex digits of the LUN's NAA id
 * after LIO's OUI, which makes LIO report exactly the NAA id the appliance lists. Each target listens
 * on the given portals; its ACL admits the initiators the appliance's does, with their CHAP.
 * Snapshots and clones are sparse file copies.
 */
final class LioListener implements TargetListener, AutoCloseable {
  private static final Path CONFIGFS = Path.of("/sys/kernel/config/target");
  private static final AtomicLong HBA = new AtomicLong(ProcessHandle.current().pid() % 100_000 * 10_000);

  private record Lun(Path file, LoopDevice loop, Path backstore) {}

  private static final class Target {
    final Path tpg;
    final Map<Integer, Integer> luns = new TreeMap<>(); // LUN index -> LUN number
    Map<String, Optional<QnapApi.Chap>> acl = Map.of();

    Target(Path tpg) {
      this.tpg = tpg;
    }
  }

  private final Path dir;
  private final List<String> portals;
  private final Map<Integer, Lun> luns = new HashMap<>();
  private final Map<Integer, Target> targets = new HashMap<>();
  private final Map<Integer, Path> pendingClones = new HashMap<>(); // LUN index -> snapshot file to copy
  private final Map<Long, Path> snapshots = new HashMap<>();

  LioListener(Path dir, List<String> portals) {
    this.dir = dir;
    this.portals = List.copyOf(portals);
  }

  @Override
  public synchronized void lunCreated(int lunIndex, String name, long bytes, String naa) {
    try {
      Files.createDirectories(dir);
      Path file = dir.resolve("lun-" + lunIndex + "-" + HBA.incrementAndGet() + ".img");
      Path source = pendingClones.remove(lunIndex);
      if (source != null) {
        copy(source, file);
      }
      try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
        f.setLength(Math.max(bytes, f.length()));
      }
      LoopDevice loop = LoopDevices.attach(file, false);
      Path backstore = CONFIGFS.resolve("core/fileio_" + HBA.incrementAndGet()).resolve("lun" + lunIndex);
      Files.createDirectories(backstore);
      write(backstore.resolve("control"), "fd_dev_name=" + loop.device());
      write(backstore.resolve("wwn/vpd_unit_serial"), naa.substring(7));
      write(backstore.resolve("enable"), "1");
      luns.put(lunIndex, new Lun(file, loop, backstore));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public synchronized void lunResized(int lunIndex, long bytes) {
    Lun l = luns.get(lunIndex);
    try (RandomAccessFile f = new RandomAccessFile(l.file().toFile(), "rw")) {
      f.setLength(bytes);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    LoopDevices.refreshCapacity(l.loop());
  }

  @Override
  public synchronized void lunDeleted(int lunIndex) {
    Lun l = luns.remove(lunIndex);
    if (l != null) {
      for (Map.Entry<Integer, Target> t : targets.entrySet()) {
        if (t.getValue().luns.containsKey(lunIndex)) {
          lunUnmapped(t.getKey(), lunIndex);
        }
      }
      removeLun(l);
    }
  }

  @Override
  public synchronized void lunCloned(int lunIndex, int sourceLunIndex, long snapshotId) {
    pendingClones.put(lunIndex, snapshots.get(snapshotId));
  }

  @Override
  public synchronized void snapshotTaken(int lunIndex, long snapshotId) {
    Path copy = dir.resolve("snap-" + snapshotId + "-" + HBA.incrementAndGet() + ".img");
    copy(luns.get(lunIndex).file(), copy);
    snapshots.put(snapshotId, copy);
  }

  @Override
  public synchronized void snapshotDeleted(int lunIndex, long snapshotId) {
    Path copy = snapshots.remove(snapshotId);
    if (copy != null) {
      delete(copy);
    }
  }

  @Override
  public synchronized void targetCreated(int targetIndex, String iqn) {
    try {
      Path tpg = CONFIGFS.resolve("iscsi").resolve(iqn).resolve("tpgt_1");
      Files.createDirectories(tpg.resolve("lun"));
      for (String portal : portals) {
        Files.createDirectories(tpg.resolve("np").resolve(portal));
      }
      write(tpg.resolve("attrib/generate_node_acls"), "0");
      write(tpg.resolve("attrib/demo_mode_write_protect"), "0");
      write(tpg.resolve("attrib/authentication"), "0");
      write(tpg.resolve("enable"), "1");
      targets.put(targetIndex, new Target(tpg));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public synchronized void targetDeleted(int targetIndex) {
    Target t = targets.remove(targetIndex);
    if (t != null) {
      removeTarget(t);
    }
  }

  @Override
  public synchronized void lunMapped(int targetIndex, int lunIndex, int lunNumber) {
    Target t = targets.get(targetIndex);
    try {
      Path lun = t.tpg.resolve("lun/lun_" + lunNumber);
      Files.createDirectories(lun);
      Files.createSymbolicLink(lun.resolve("lio_lun"), luns.get(lunIndex).backstore());
      t.luns.put(lunIndex, lunNumber);
      for (String initiator : t.acl.keySet()) {
        mapInto(t, initiator, lunNumber);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public synchronized void lunUnmapped(int targetIndex, int lunIndex) {
    Target t = targets.get(targetIndex);
    Integer number = t.luns.remove(lunIndex);
    if (number != null) {
      for (String initiator : t.acl.keySet()) {
        unmapFrom(t, initiator, number);
      }
      delete(t.tpg.resolve("lun/lun_" + number + "/lio_lun"));
      delete(t.tpg.resolve("lun/lun_" + number));
    }
  }

  /** An initiator without a node ACL of its own reaches the LUNs read/write through LIO's generated ones. */
  @Override
  public synchronized void defaultPolicyChanged(int targetIndex, boolean admitsUnlisted) {
    Target t = targets.get(targetIndex);
    write(t.tpg.resolve("attrib/generate_node_acls"), admitsUnlisted ? "1" : "0");
    write(t.tpg.resolve("attrib/cache_dynamic_acls"), admitsUnlisted ? "1" : "0");
  }

  @Override
  public synchronized void aclChanged(int targetIndex, Map<String, Optional<QnapApi.Chap>> initiators) {
    Target t = targets.get(targetIndex);
    try {
      for (String gone : t.acl.keySet()) {
        if (!initiators.containsKey(gone)) {
          removeAcl(t, gone);
        }
      }
      boolean chap = false;
      for (Map.Entry<String, Optional<QnapApi.Chap>> e : initiators.entrySet()) {
        Path acl = t.tpg.resolve("acls").resolve(e.getKey());
        if (!t.acl.containsKey(e.getKey())) {
          Files.createDirectories(acl);
          for (int number : t.luns.values()) {
            mapInto(t, e.getKey(), number);
          }
        }
        if (e.getValue().isPresent()) {
          QnapApi.Chap c = e.getValue().get();
          chap = true;
          write(acl.resolve("auth/userid"), c.user());
          write(acl.resolve("auth/password"), c.password());
          if (c.mutualUser().isPresent()) {
            write(acl.resolve("auth/userid_mutual"), c.mutualUser().get());
            write(acl.resolve("auth/password_mutual"), c.mutualPassword().orElseThrow());
          }
        }
      }
      write(t.tpg.resolve("attrib/authentication"), chap ? "1" : "0");
      t.acl = Map.copyOf(initiators);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void mapInto(Target t, String initiator, int number) throws IOException {
    Path mapped = t.tpg.resolve("acls").resolve(initiator).resolve("lun_" + number);
    Files.createDirectories(mapped);
    Files.createSymbolicLink(mapped.resolve("mapped_lun"), t.tpg.resolve("lun/lun_" + number));
  }

  private static void unmapFrom(Target t, String initiator, int number) {
    Path mapped = t.tpg.resolve("acls").resolve(initiator).resolve("lun_" + number);
    delete(mapped.resolve("mapped_lun"));
    delete(mapped);
  }

  private static void removeAcl(Target t, String initiator) {
    for (int number : t.luns.values()) {
      unmapFrom(t, initiator, number);
    }
    delete(t.tpg.resolve("acls").resolve(initiator));
  }

  private void removeTarget(Target t) {
    write(t.tpg.resolve("enable"), "0");
    for (String initiator : t.acl.keySet()) {
      removeAcl(t, initiator);
    }
    for (int number : t.luns.values()) {
      delete(t.tpg.resolve("lun/lun_" + number + "/lio_lun"));
      delete(t.tpg.resolve("lun/lun_" + number));
    }
    t.luns.clear();
    for (String portal : portals) {
      delete(t.tpg.resolve("np").resolve(portal));
    }
    delete(t.tpg);
    delete(t.tpg.getParent());
  }

  private static void removeLun(Lun l) {
    delete(l.backstore());
    delete(l.backstore().getParent());
    LoopDevices.detach(l.loop());
    delete(l.file());
  }

  /** Takes down every target, backstore, loop device and file this listener made. */
  @Override
  public synchronized void close() {
    for (Target t : new ArrayList<>(targets.values())) {
      removeTarget(t);
    }
    targets.clear();
    for (Lun l : new ArrayList<>(luns.values())) {
      removeLun(l);
    }
    luns.clear();
    snapshots.values().forEach(LioListener::delete);
    snapshots.clear();
  }

  /** A sparse copy: cp skips the holes that a byte-by-byte copy would write out. */
  private static void copy(Path from, Path to) {
    try {
      Process p = new ProcessBuilder("cp", "--sparse=always", "--reflink=auto", from.toString(), to.toString())
          .redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("cp " + from + " " + to + " failed: " + out);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static void delete(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove " + p, e);
    }
  }

  // No trailing newline: LIO keeps CHAP names and secrets byte for byte, a newline included.
  private static void write(Path attribute, String value) {
    try {
      Files.writeString(attribute, value, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + attribute, e);
    }
  }
}

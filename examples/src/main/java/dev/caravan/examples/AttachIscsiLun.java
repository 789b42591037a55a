package dev.caravan.examples;

import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FormatOutcome;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.iscsi.Portal;
import dev.caravan.storage.mount.MountFlag;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.multipath.MultipathMap;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Embedding host-storage's iSCSI and multipath packages: log in to a target on every portal, find
 * its LUN 0 by WWID, wait for the multipath map, format it only if it is empty, mount it, and then
 * take it all down again. Needs root, iscsid and multipathd running, and a target that admits this
 * host's initiator. Usage: {@code AttachIscsiLun TARGET_IQN PORTAL[,PORTAL...] MOUNT_POINT}.
 */
public final class AttachIscsiLun {
  private AttachIscsiLun() {}

  public static void main(String[] args) {
    if (args.length != 3) {
      System.err.println("usage: AttachIscsiLun TARGET_IQN PORTAL[,PORTAL...] MOUNT_POINT");
      System.exit(2);
    }
    List<Portal> portals = Stream.of(args[1].split(",", -1)).map(Portal::parse).toList();
    run(args[0], portals, Path.of(args[2]), System.out);
  }

  /** Attaches, mounts, reports and detaches; returns what formatting did. */
  public static FormatOutcome run(String target, List<Portal> portals, Path mountPoint, PrintStream out) {
    Iscsi iscsi = Iscsi.system();
    Multipath multipath = Multipath.system();
    portals.forEach(portal -> iscsi.login(target, portal, Optional.empty()));
    Wwid wwid = iscsi.awaitDisk(iscsi.session(target, portals.getFirst()).orElseThrow(), 0, Duration.ofSeconds(30)).wwid().orElseThrow();
    MultipathMap map = multipath.awaitMap(wwid, portals.size(), Duration.ofSeconds(30));
    FormatOutcome format = Filesystems.formatIfEmpty(map.device(), FsType.EXT4, List.of());
    Mounts.mount(map.device(), mountPoint, "ext4", EnumSet.of(MountFlag.NO_SUID, MountFlag.NO_DEV), null);
    out.printf("%s (WWID %s, %d paths, %s) mounted at %s%n", map.device(), wwid, map.paths().size(), format, mountPoint);
    Mounts.unmount(mountPoint);
    multipath.flush(wwid);
    portals.forEach(portal -> iscsi.logout(target, portal));
    return format;
  }
}

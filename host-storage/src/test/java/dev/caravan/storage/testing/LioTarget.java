package dev.caravan.storage.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real iSCSI target in the guest kernel: LIO, built through configfs ({@code
 * /sys/kernel/config/target}) the way targetcli does it, only faster (no Python, no D-Bus). One
 * target per volume, a fileio backstore on a sparse file, one portal group with the given portals,
 * a unit serial (without one every LIO LUN reports the same WWID and multipath would merge them),
 * and ACLs per initiator, with CHAP when asked.
 *
 * <p>{@link #close()} takes it all down again, in the reverse order configfs demands.
 */
public final class LioTarget implements AutoCloseable {
  public static final Path CONFIGFS = Path.of("/sys/kernel/config/target");
  private static final AtomicInteger SEQUENCE = new AtomicInteger();

  private final String iqn;
  private final Path backstore;
  private final Path file;
  private final Path tpg;
  private final String serial;
  private final List<String> portals;
  private final List<String> initiators = new ArrayList<>();

  private LioTarget(String iqn, Path backstore, Path file, Path tpg, String serial, List<String> portals) {
    this.iqn = iqn;
    this.backstore = backstore;
    this.file = file;
    this.tpg = tpg;
    this.serial = serial;
    this.portals = List.copyOf(portals);
  }

  /**
   * A target {@code iqn.2003-01.dev.caravan.test:<name>} with one LUN of {@code sizeBytes} on a
   * sparse file in {@code dir}, listening on {@code portals} ({@code "127.0.0.1:3260"}). No
   * initiator is admitted yet: see {@link #allow}.
   */
  public static LioTarget create(String name, long sizeBytes, Path dir, List<String> portals)
      throws IOException {
    int n = SEQUENCE.incrementAndGet();
    String run = Long.toHexString(ProcessHandle.current().pid());
    // 12 hex digits, unique per target in this boot: becomes the NAA identifier (and the WWID).
    String serial = String.format("%06x%06x", ProcessHandle.current().pid() & 0xffffff, n);
    Path file = dir.resolve(name + "-" + run + "-" + n + ".img");
    try (var channel =
        java.nio.channels.FileChannel.open(
            file, java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE)) {
      channel.truncate(sizeBytes);
      channel.write(java.nio.ByteBuffer.wrap(new byte[1]), sizeBytes - 1);
    }
    // The HBA's name must be fileio_<decimal index>; one per target keeps their teardown apart.
    long hba = (ProcessHandle.current().pid() % 1_000_000) * 1000 + n;
    Path backstore = CONFIGFS.resolve("core/fileio_" + hba).resolve(name);
    Files.createDirectories(backstore);
    write(backstore.resolve("control"), "fd_dev_name=" + file + ",fd_dev_size=" + sizeBytes);
    write(backstore.resolve("wwn/vpd_unit_serial"), serial);
    write(backstore.resolve("enable"), "1");

    String iqn = "iqn.2003-01.dev.caravan.test:" + name + "-" + run + "-" + n;
    Path tpg = CONFIGFS.resolve("iscsi").resolve(iqn).resolve("tpgt_1");
    LioTarget target = new LioTarget(iqn, backstore, file, tpg, serial, portals);
    Path lun = tpg.resolve("lun/lun_0");
    Files.createDirectories(lun);
    Files.createSymbolicLink(lun.resolve("lio_lun"), backstore);
    for (String portal : portals) {
      Files.createDirectory(tpg.resolve("np").resolve(portal));
    }
    // Only listed initiators get in, and only with CHAP when their ACL sets it.
    write(tpg.resolve("attrib/generate_node_acls"), "0");
    write(tpg.resolve("attrib/demo_mode_write_protect"), "0");
    write(tpg.resolve("attrib/authentication"), "0");
    write(tpg.resolve("enable"), "1");
    return target;
  }

  public String iqn() {
    return iqn;
  }

  /** The unit serial: LIO builds the LUN's NAA designator (its WWID) from it. */
  public String serial() {
    return serial;
  }

  public List<String> portals() {
    return portals;
  }

  /** Admits {@code initiator} to LUN 0 without CHAP. */
  public void allow(String initiator) throws IOException {
    acl(initiator);
  }

  /** Admits {@code initiator} to LUN 0 when it logs in with one-way CHAP. */
  public void allow(String initiator, String user, String secret) throws IOException {
    Path acl = acl(initiator);
    write(acl.resolve("auth/userid"), user);
    write(acl.resolve("auth/password"), secret);
    write(tpg.resolve("attrib/authentication"), "1");
  }

  /** Admits {@code initiator} with mutual CHAP: the target answers as {@code targetUser}. */
  public void allow(String initiator, String user, String secret, String targetUser, String targetSecret)
      throws IOException {
    allow(initiator, user, secret);
    Path acl = tpg.resolve("acls").resolve(initiator);
    write(acl.resolve("auth/userid_mutual"), targetUser);
    write(acl.resolve("auth/password_mutual"), targetSecret);
  }

  private Path acl(String initiator) throws IOException {
    Path acl = tpg.resolve("acls").resolve(initiator);
    Path mapped = acl.resolve("lun_0");
    if (!Files.isDirectory(mapped)) {
      Files.createDirectories(mapped);
      Files.createSymbolicLink(mapped.resolve("mapped_lun"), tpg.resolve("lun/lun_0"));
      initiators.add(initiator);
    }
    return acl;
  }

  @Override
  public void close() throws IOException {
    write(tpg.resolve("enable"), "0");
    for (String initiator : initiators) {
      Path acl = tpg.resolve("acls").resolve(initiator);
      Files.deleteIfExists(acl.resolve("lun_0/mapped_lun"));
      Files.deleteIfExists(acl.resolve("lun_0"));
      Files.deleteIfExists(acl);
    }
    for (String portal : portals) {
      Files.deleteIfExists(tpg.resolve("np").resolve(portal));
    }
    Files.deleteIfExists(tpg.resolve("lun/lun_0/lio_lun"));
    Files.deleteIfExists(tpg.resolve("lun/lun_0"));
    Files.deleteIfExists(tpg);
    Files.deleteIfExists(tpg.getParent());
    Files.deleteIfExists(backstore);
    Files.deleteIfExists(backstore.getParent());
    Files.deleteIfExists(file);
  }

  // No trailing newline: LIO keeps CHAP names and secrets byte for byte, a newline included.
  private static void write(Path attribute, String value) throws IOException {
    Files.writeString(attribute, value, StandardCharsets.US_ASCII);
  }
}

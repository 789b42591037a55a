package dev.caravan.storage.iscsi;

import dev.caravan.storage.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Sets the values Caravan owns in a node record file of open-iscsi's node database: {@code
 * node.startup}, {@code node.session.initial_login_retry_max}, the path timeouts ({@link
 * PathTimeouts}) and the CHAP credentials.
 *
 * <p>Why write the file rather than run {@code iscsiadm -m node -o update -n ... -v VALUE}: that is
 * iscsiadm's only way to set a value, and it puts the value on the command line, where any user
 * can read it in {@code /proc/<pid>/cmdline} ({@code ps}) while it runs. Here the secret goes from
 * this process's memory into a file only root can read. The file is the database iscsiadm itself
 * reads at login: one {@code name = value} line per setting, later lines overriding earlier ones,
 * comments starting with {@code #}. Changes are made under iscsiadm's own database lock (a hard
 * link {@code lock.write} to {@code lock} in {@code /run/lock/iscsi}), and the file is replaced by
 * a rename, so a concurrent iscsiadm reads the old record or the new one, never half of each.
 */
final class NodeRecordFiles {
  static final Path NODES = Path.of("/etc/iscsi/nodes");
  private static final Path LOCK_DIR = Path.of("/run/lock/iscsi");
  private static final Path LOCK = LOCK_DIR.resolve("lock");
  private static final Path LOCK_WRITE = LOCK_DIR.resolve("lock.write");
  // iscsiadm waits 30 s for its lock and then goes ahead anyway; we wait as long, then give up.
  private static final int LOCK_ATTEMPTS = 3000;
  private static final long LOCK_PAUSE_MILLIS = 10;

  private static final String AUTH = "node.session.auth.";
  private static final String STARTUP = "node.startup";
  private static final String LOGIN_RETRIES = "node.session.initial_login_retry_max";
  private static final String END_RECORD = "# END RECORD";
  private static final List<String> TIMEOUTS =
      List.of(PathTimeouts.REPLACEMENT_TIMEOUT, PathTimeouts.NOOP_OUT_INTERVAL, PathTimeouts.NOOP_OUT_TIMEOUT);

  private NodeRecordFiles() {}

  /**
   * The file of a record: {@code nodes/<target>/<address>,<port>,<tpgt>/<iface>}. A record whose
   * portal group is unknown (tpgt -1: made by {@code -o new} rather than discovery) is the file
   * {@code nodes/<target>/<address>,<port>}, the layout open-iscsi used before 2.0-870 for all.
   */
  static Path fileOf(Path nodes, NodeRecord record) {
    Path target = nodes.resolve(record.target());
    String portal = record.portal().address() + "," + record.portal().port();
    for (Path candidate : List.of(target.resolve(portal + "," + record.tpgt()), target.resolve(portal))) {
      if (Files.isDirectory(candidate)) {
        return candidate.resolve(record.iface());
      }
      if (Files.isRegularFile(candidate)) {
        return candidate;
      }
    }
    return target.resolve(portal + "," + record.tpgt()).resolve(record.iface());
  }

  /**
   * The record's text with Caravan's settings: startup manual, one login attempt, the path
   * timeouts, and CHAP as given (or none).
   */
  static String withSettings(String record, PathTimeouts timeouts, Optional<Chap> chap) {
    List<String> kept = new ArrayList<>();
    for (String line : record.lines().toList()) {
      String key = key(line);
      if (!key.equals(STARTUP) && !key.equals(LOGIN_RETRIES) && !TIMEOUTS.contains(key) && !key.startsWith(AUTH)) {
        kept.add(line);
      }
    }
    List<String> ours = new ArrayList<>();
    ours.add(STARTUP + " = manual");
    // One login attempt per iscsiadm run. iscsid.conf's default is 8 attempts of up to 15 s each
    // (its own comment: 120 seconds) against a dead portal; the caller retries within its deadline.
    ours.add(LOGIN_RETRIES + " = 0");
    ours.add(PathTimeouts.REPLACEMENT_TIMEOUT + " = " + timeouts.replacementTimeout().toSeconds());
    ours.add(PathTimeouts.NOOP_OUT_INTERVAL + " = " + timeouts.noopOutInterval().toSeconds());
    ours.add(PathTimeouts.NOOP_OUT_TIMEOUT + " = " + timeouts.noopOutTimeout().toSeconds());
    if (chap.isEmpty()) {
      ours.add(AUTH + "authmethod = None");
    } else {
      Chap c = chap.get();
      ours.add(AUTH + "authmethod = CHAP");
      ours.add(AUTH + "username = " + c.username());
      ours.add(AUTH + "password = " + c.secret());
      if (c.isMutual()) {
        ours.add(AUTH + "username_in = " + c.targetUsername().orElseThrow());
        ours.add(AUTH + "password_in = " + c.targetSecret().orElseThrow());
      }
    }
    int end = kept.indexOf(END_RECORD);
    kept.addAll(end < 0 ? kept.size() : end, ours);
    return String.join("\n", kept) + "\n";
  }

  /** The setting a record line names, or "" for comments and blank lines. */
  private static String key(String line) {
    String trimmed = line.strip();
    if (trimmed.isEmpty() || trimmed.startsWith("#")) {
      return "";
    }
    int end = 0;
    while (end < trimmed.length()
        && trimmed.charAt(end) != '='
        && !Character.isWhitespace(trimmed.charAt(end))) {
      end++;
    }
    return trimmed.substring(0, end);
  }

  /** Rewrites the record's file with Caravan's settings, under iscsiadm's database lock. */
  static void apply(Path nodes, NodeRecord record, PathTimeouts timeouts, Optional<Chap> chap) {
    Path file = fileOf(nodes, record);
    lock();
    try {
      String current;
      try {
        current = Files.readString(file, StandardCharsets.UTF_8);
      } catch (NoSuchFileException e) {
        throw new StorageException("the node record of " + record + " vanished: " + file);
      }
      replace(nodes.resolveSibling(".caravan-node-record.tmp"), file, withSettings(current, timeouts, chap));
    } catch (IOException e) {
      throw new StorageException("cannot update the node record " + file + ": " + e, e);
    } finally {
      unlock();
    }
  }

  // Mode 0600 from creation on: the file holds CHAP secrets (iscsiadm's own are 0600 too). The
  // temporary file sits beside the node database, not in it, where iscsiadm would take its name
  // for a portal; same filesystem, so the rename is atomic. The database lock makes it ours.
  private static void replace(Path temp, Path file, String content) throws IOException {
    Files.deleteIfExists(temp);
    Files.createFile(
        temp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    try {
      Files.writeString(temp, content, StandardCharsets.UTF_8, StandardOpenOption.WRITE);
      Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(temp);
      throw e;
    }
  }

  private static void lock() {
    try {
      Files.createDirectories(LOCK_DIR);
      try {
        Files.createFile(LOCK);
      } catch (FileAlreadyExistsException e) {
        // iscsiadm made it; it is only ever linked to, never written
      }
      for (int i = 0; i < LOCK_ATTEMPTS; i++) {
        try {
          Files.createLink(LOCK_WRITE, LOCK);
          return;
        } catch (FileAlreadyExistsException e) {
          Thread.sleep(LOCK_PAUSE_MILLIS);
        }
      }
    } catch (IOException e) {
      throw new StorageException("cannot take open-iscsi's node database lock " + LOCK_WRITE, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StorageException("interrupted waiting for " + LOCK_WRITE, e);
    }
    throw new StorageException(
        "open-iscsi's node database lock " + LOCK_WRITE + " is still held after 30 s; if no"
            + " iscsiadm is running, it is stale: remove it");
  }

  private static void unlock() {
    try {
      Files.deleteIfExists(LOCK_WRITE);
    } catch (IOException e) {
      throw new StorageException("cannot release " + LOCK_WRITE, e);
    }
  }
}

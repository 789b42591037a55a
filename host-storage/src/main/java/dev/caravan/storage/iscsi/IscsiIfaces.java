package dev.caravan.storage.iscsi;

import dev.caravan.storage.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * open-iscsi interface records ({@code /etc/iscsi/ifaces/<name>}), read directly: one {@code name =
 * value} line per setting, as iscsiadm writes them. An interface is how one host logs in as more than
 * one initiator: a record's {@code iface.initiatorname} replaces the host's name from {@code
 * /etc/iscsi/initiatorname.iscsi} for every login through it.
 */
final class IscsiIfaces {
  static final Path IFACES = Path.of("/etc/iscsi/ifaces");
  static final String INITIATOR_NAME = "iface.initiatorname";
  static final String TRANSPORT = "iface.transport_name";
  // iscsid's built-in interfaces, which have no record to write: the host's own identity (default)
  // and its iSER twin.
  static final Set<String> BUILT_IN = Set.of("default", "iser");
  // Becomes a file name in the database; open-iscsi's limit is 64 characters.
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}");

  private IscsiIfaces() {}

  /** Checks that {@code name} can be an interface record's name. */
  static String requireName(String name) {
    Objects.requireNonNull(name, "iface");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("iSCSI interface '" + name + "' must be 1-64 letters, digits, '_', '.',"
          + " ':' or '-', starting with a letter or digit");
    }
    return name;
  }

  /** The value of {@code key} in the record of {@code name}; empty when the record or the key is missing. */
  static Optional<String> value(Path ifaces, String name, String key) {
    Optional<String> record = record(ifaces, name);
    if (record.isEmpty()) {
      return Optional.empty();
    }
    Optional<String> found = Optional.empty();
    for (String line : record.get().lines().map(String::strip).toList()) {
      if (line.startsWith("#")) {
        continue;
      }
      int eq = line.indexOf('=');
      if (eq > 0 && line.substring(0, eq).strip().equals(key)) {
        String v = line.substring(eq + 1).strip();
        // iscsiadm writes "<empty>" for an unset value; later lines override earlier ones.
        found = v.isEmpty() || v.equals("<empty>") ? Optional.empty() : Optional.of(v);
      }
    }
    return found;
  }

  /** The record's text, or empty when there is no record of that name. */
  static Optional<String> record(Path ifaces, String name) {
    try {
      return Optional.of(Files.readString(ifaces.resolve(requireName(name)), StandardCharsets.UTF_8));
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new StorageException("cannot read the iSCSI interface record " + ifaces.resolve(name) + ": " + e, e);
    }
  }
}

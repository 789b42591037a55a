package dev.caravan.csi.dhv;

import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.ReplicationSettings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * A volume's {@code parameters}, split into what the backend provisions with (its CreateVolume
 * parameters, e.g. {@code fsType}) and the owner and mode of the mounted filesystem's root ({@code
 * mode}, {@code uid}, {@code gid}, as Nomad's built-in {@code mkdir} plugin has them). Anything else
 * is refused, naming what is known.
 */
record DhvParameters(Map<String, String> backend, Optional<Integer> mode, Optional<Integer> uid,
    Optional<Integer> gid) {
  static final Set<String> ROOT = Set.of("mode", "uid", "gid");
  private static final Pattern OCTAL = Pattern.compile("0?[0-7]{3}");
  private static final Pattern ID = Pattern.compile("[0-9]{1,10}");

  DhvParameters {
    backend = Map.copyOf(backend);
  }

  static DhvParameters parse(Map<String, String> given, Set<String> backendKnown) {
    return parse(given, backendKnown, false);
  }

  /**
   * @param passphraseFile whether the plugin was installed with a passphrase file, the only place an
   *     encrypted volume's passphrase can come from
   */
  static DhvParameters parse(Map<String, String> given, Set<String> backendKnown, boolean passphraseFile) {
    Set<String> known = new TreeSet<>(backendKnown);
    // Copies travel between CSI plugins over their peer channel; a host volume plugin has none.
    known.removeAll(ReplicationSettings.PARAMETERS);
    known.addAll(ROOT);
    Map<String, String> backend = new HashMap<>();
    for (Map.Entry<String, String> e : given.entrySet()) {
      if (!known.contains(e.getKey())) {
        throw DhvException.invalid("parameter '" + IdRules.printable(e.getKey()) + "' is not known; known"
            + " parameters: " + String.join(", ", known));
      }
      if (!ROOT.contains(e.getKey())) {
        backend.put(e.getKey(), e.getValue());
      }
    }
    if (Encryption.Mode.ON.value().equals(given.get(Encryption.PARAMETER)) && !passphraseFile) {
      throw DhvException.invalid("parameter " + Encryption.PARAMETER + "=on needs a passphrase file: Nomad passes"
          + " a Dynamic Host Volume plugin no secrets, so install it with `caravan dhv install --passphrase-file"
          + " /absolute/path`");
    }
    Optional<Integer> mode = Optional.ofNullable(given.get("mode")).map(m -> {
      if (!OCTAL.matcher(m).matches()) {
        throw DhvException.invalid("parameter mode '" + IdRules.printable(m) + "' must be octal permissions"
            + " such as 0755 (no setuid, setgid or sticky bits)");
      }
      return Integer.parseInt(m, 8);
    });
    return new DhvParameters(backend, mode, id(given, "uid"), id(given, "gid"));
  }

  private static Optional<Integer> id(Map<String, String> given, String key) {
    return Optional.ofNullable(given.get(key)).map(v -> {
      long n = ID.matcher(v).matches() ? Long.parseLong(v) : -1;
      if (n < 0 || n > Integer.MAX_VALUE) {
        throw DhvException.invalid("parameter " + key + " '" + IdRules.printable(v) + "' must be a numeric id"
            + " from 0 to " + Integer.MAX_VALUE);
      }
      return (int) n;
    });
  }

  /** Whether the volume is encrypted ({@code encryption=on}). */
  boolean encrypted() {
    return Encryption.Mode.ON.value().equals(backend.get(Encryption.PARAMETER));
  }

  /** Sets what was given on the mounted root (never following a link); leaves the rest as it is. */
  void applyTo(Path root) {
    try {
      if (mode.isPresent()) {
        Files.setPosixFilePermissions(root, permissions(mode.get()));
      }
      if (uid.isPresent()) {
        Files.setAttribute(root, "unix:uid", uid.get(), LinkOption.NOFOLLOW_LINKS);
      }
      if (gid.isPresent()) {
        Files.setAttribute(root, "unix:gid", gid.get(), LinkOption.NOFOLLOW_LINKS);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot set the owner or mode of " + root, e);
    }
  }

  private static Set<PosixFilePermission> permissions(int mode) {
    Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
    PosixFilePermission[] bits = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
      PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ
    };
    for (int i = 0; i < bits.length; i++) {
      if ((mode & (1 << i)) != 0) {
        out.add(bits[i]);
      }
    }
    return out;
  }
}

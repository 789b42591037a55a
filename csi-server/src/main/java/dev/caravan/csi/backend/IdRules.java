package dev.caravan.csi.backend;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Shared id syntax checks. Ids end up in file paths, dataset names and journal file names, so a
 * backend acts only on ids of the form it issues (see the path-traversal report against the hostpath
 * driver, kubernetes-csi/csi-driver-host-path#644); every other id is answered as absent ({@link
 * IdShape.NotOurs}) before any lookup.
 */
public final class IdRules {
  /** The CSI spec's size limit for ids and names, in bytes. */
  public static final int MAX_BYTES = 128;

  private IdRules() {}

  /**
   * INVALID_ARGUMENT for what no id can be, on any backend: empty (a missing REQUIRED field), longer
   * than CSI's 128 bytes, or holding a NUL. Anything else is a question for the backend ({@link
   * ControllerBackend#volumeId}): an id it could never have issued names nothing, it is not invalid.
   */
  public static void requireBounded(String field, String id) {
    if (id.isEmpty()) {
      throw CsiException.invalid(field + " is required");
    }
    if (id.getBytes(StandardCharsets.UTF_8).length > MAX_BYTES) {
      throw CsiException.invalid(
          field + " '" + printable(id) + "' is longer than " + MAX_BYTES + " bytes, CSI's limit for ids");
    }
    if (id.indexOf('\0') >= 0) {
      throw CsiException.invalid(field + " '" + printable(id) + "' contains a NUL character, which no id can hold");
    }
  }

  /**
   * 12 hex digits of the SHA-256 of a CO's name (UTF-8): the part of every backend's ids, lock keys
   * and storage names that a name decides, so that a retried create finds what the first one made.
   * Ids already issued hold it: it never changes.
   */
  public static String nameHash(String name) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 6);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is always available", e);
    }
  }

  /** The value with control characters made visible, bounded, for error messages. */
  public static String printable(String value) {
    String v = value.length() > 140 ? value.substring(0, 140) + "..." : value;
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (Character.isISOControl(c)) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }
}

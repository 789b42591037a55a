package dev.caravan.csi.backend;

import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/**
 * Shared id syntax checks. Ids end up in file paths, dataset names and journal file names, so a
 * backend accepts only what it could have issued (see the path-traversal report against the hostpath
 * driver, kubernetes-csi/csi-driver-host-path#644).
 */
public final class IdRules {
  /** The CSI spec's size limit for ids and names, in bytes. */
  public static final int MAX_BYTES = 128;

  /** Lower-case letters, digits and dashes, starting with a letter or digit: no '/', '.', NUL. */
  public static final Pattern TOKEN = Pattern.compile("[a-z0-9][a-z0-9-]*");

  private IdRules() {}

  /** INVALID_ARGUMENT unless {@code id} is a non-empty {@link #TOKEN} of at most 128 bytes. */
  public static void requireToken(String field, String id) {
    if (id.isEmpty()) {
      throw CsiException.invalid(field + " is required");
    }
    if (id.getBytes(StandardCharsets.UTF_8).length > MAX_BYTES) {
      throw CsiException.invalid(field + " is longer than " + MAX_BYTES + " bytes");
    }
    if (!TOKEN.matcher(id).matches()) {
      throw CsiException.invalid(
          field + " '" + printable(id) + "' is malformed: ids issued by this plugin contain only"
              + " lower-case letters, digits and '-' (no '/', '.', '..' or control characters)");
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

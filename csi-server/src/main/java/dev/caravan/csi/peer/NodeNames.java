package dev.caravan.csi.peer;

import java.util.regex.Pattern;

/** Node ids as peers name each other: what NodeGetInfo reports, and what certificates name. */
final class NodeNames {
  private static final Pattern NODE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}");
  static final String RULE = "a node id is letters, digits, '_', '-', '.', ':', at most 63 characters";

  private NodeNames() {}

  static boolean valid(String node) {
    return NODE.matcher(node).matches();
  }
}

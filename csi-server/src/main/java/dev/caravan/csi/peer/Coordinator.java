package dev.caravan.csi.peer;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collection;
import java.util.Comparator;

/**
 * A volume name's home: the node that decides where a new volume of that name goes and keeps its
 * claim ({@link NameClaims}). The same for every instance that knows the same nodes, by rendezvous
 * hashing (highest SHA-256 of node and name), so that two creates of one name sent to two instances
 * meet on one node and are serialized there, and names spread evenly over the nodes. A node joining
 * moves to it only the names it wins; a node leaving moves only the names it was home to.
 */
public final class Coordinator {
  private Coordinator() {}

  public static String of(String name, Collection<String> nodes) {
    return nodes.stream()
        .max(Comparator.comparingLong((String n) -> weight(n, name)).thenComparing(Comparator.reverseOrder()))
        .orElseThrow(() -> new IllegalArgumentException("no nodes"));
  }

  private static long weight(String node, String name) {
    try {
      MessageDigest d = MessageDigest.getInstance("SHA-256");
      d.update(node.getBytes(StandardCharsets.UTF_8));
      d.update((byte) 0);
      d.update(name.getBytes(StandardCharsets.UTF_8));
      // Unsigned order of the first eight bytes, as a signed long: flip the sign bit.
      return ByteBuffer.wrap(d.digest()).getLong() ^ Long.MIN_VALUE;
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }
}

package dev.caravan.csi.service;

import dev.caravan.csi.backend.CsiException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.function.Function;

/**
 * Pagination over a list sorted by id. A token is the id of the last entry returned, wrapped so that
 * it is opaque; the next page starts after that id. Tokens stay valid when entries are added or
 * removed meanwhile (nothing is skipped that existed throughout, nothing repeated). A token we could
 * not have issued is ABORTED, as the spec asks.
 */
public final class Pages {
  private static final String PREFIX = "after:";

  private Pages() {}

  /** One page and the token for the next ("" on the last page). */
  public record Page<T>(List<T> entries, String nextToken) {}

  public static <T> Page<T> page(List<T> sortedById, Function<T, String> id, int maxEntries, String token) {
    if (maxEntries < 0) {
      throw CsiException.invalid("max_entries must not be negative (got " + maxEntries + ")");
    }
    int start = 0;
    if (!token.isEmpty()) {
      String after = decode(token);
      while (start < sortedById.size() && id.apply(sortedById.get(start)).compareTo(after) <= 0) {
        start++;
      }
    }
    int end = maxEntries == 0 ? sortedById.size() : Math.min(sortedById.size(), start + maxEntries);
    List<T> entries = sortedById.subList(start, end);
    String next = end < sortedById.size() && !entries.isEmpty() ? encode(id.apply(entries.getLast())) : "";
    return new Page<>(List.copyOf(entries), next);
  }

  static String encode(String lastId) {
    return Base64.getUrlEncoder().withoutPadding().encodeToString((PREFIX + lastId).getBytes(StandardCharsets.UTF_8));
  }

  static String decode(String token) {
    try {
      String text = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
      if (text.startsWith(PREFIX) && text.length() > PREFIX.length()) {
        return text.substring(PREFIX.length());
      }
    } catch (IllegalArgumentException e) {
      // falls through to ABORTED below
    }
    throw new CsiException(
        CsiException.Kind.ABORTED,
        "starting_token is not a token this plugin issued; restart the listing without a token");
  }
}

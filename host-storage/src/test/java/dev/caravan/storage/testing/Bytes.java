package dev.caravan.storage.testing;

import java.util.Arrays;

/** Byte searches for tests that look for a secret or a plaintext in what was written. */
public final class Bytes {
  private Bytes() {}

  /**
   * Whether {@code needle} occurs in {@code haystack}, byte for byte. Boyer-Moore-Horspool: the
   * haystacks are whole volume images and LUN files, mostly zeros, and the guest runs the tests under
   * an emulated CPU without C2, where a byte-by-byte search of a few hundred MiB took seconds; a
   * window whose last byte is not in the needle moves on by the needle's whole length.
   */
  public static boolean contains(byte[] haystack, byte[] needle) {
    int m = needle.length;
    if (m == 0) {
      return true;
    }
    int[] shift = new int[256];
    Arrays.fill(shift, m);
    for (int j = 0; j < m - 1; j++) {
      shift[needle[j] & 0xff] = m - 1 - j;
    }
    byte last = needle[m - 1];
    for (int i = 0; i + m <= haystack.length; i += shift[haystack[i + m - 1] & 0xff]) {
      if (haystack[i + m - 1] == last && Arrays.equals(haystack, i, i + m - 1, needle, 0, m - 1)) {
        return true;
      }
    }
    return false;
  }
}

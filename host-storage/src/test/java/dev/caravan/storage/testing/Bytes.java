package dev.caravan.storage.testing;

/** Byte searches for tests that look for a secret or a plaintext in what was written. */
public final class Bytes {
  private Bytes() {}

  /** Whether {@code needle} occurs in {@code haystack}, byte for byte. */
  public static boolean contains(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }
}

package dev.caravan.storage.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

class BytesTest {
  @Test
  void findsANeedleWhereverItLiesAndNothingThatIsNotThere() {
    byte[] needle = "plaintext, never on the disk".getBytes(StandardCharsets.US_ASCII);
    for (int at : new int[] {0, 1, 4095, 4096 - needle.length, 1 << 20}) {
      byte[] haystack = new byte[(1 << 20) + needle.length];
      System.arraycopy(needle, 0, haystack, at, needle.length);
      assertThat(Bytes.contains(haystack, needle)).as("at %d", at).isTrue();
      haystack[at + needle.length - 1] ^= 1;
      assertThat(Bytes.contains(haystack, needle)).as("at %d, its last byte changed", at).isFalse();
      haystack[at + needle.length - 1] ^= 1;
      haystack[at] ^= 1;
      assertThat(Bytes.contains(haystack, needle)).as("at %d, its first byte changed", at).isFalse();
    }
    assertThat(Bytes.contains(new byte[3], new byte[4])).isFalse();
  }

  @Test
  void agreesWithAByteByByteSearchOnSmallAlphabets() {
    Random random = new Random(7);
    for (int round = 0; round < 2000; round++) {
      byte[] haystack = new byte[random.nextInt(64)];
      byte[] needle = new byte[1 + random.nextInt(6)];
      fill(random, haystack);
      fill(random, needle);
      assertThat(Bytes.contains(haystack, needle)).as("round %d", round).isEqualTo(naive(haystack, needle));
    }
  }

  /** Three distinct bytes, so that partial and repeated matches are common. */
  private static void fill(Random random, byte[] bytes) {
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) (random.nextInt(3) - 1);
    }
  }

  private static boolean naive(byte[] haystack, byte[] needle) {
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      if (Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
        return true;
      }
    }
    return false;
  }
}

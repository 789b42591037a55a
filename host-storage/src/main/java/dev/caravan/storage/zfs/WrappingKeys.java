package dev.caravan.storage.zfs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The wrapping key of {@code keyformat=passphrase}, derived as OpenZFS's own tools derive it, so
 * that {@code zfs load-key} with the same passphrase opens what this facade made and the other way
 * round: PBKDF2 with HMAC-SHA1, {@value #KEY_BYTES} bytes out, the passphrase's bytes as the password,
 * and as the salt the 8 bytes of the {@code pbkdf2salt} property's 64-bit value in the host's byte
 * order (the tools pass the address of that integer).
 *
 * <p>SHA-1 is computed here, not through {@code MessageDigest}, so that every state derived from the
 * passphrase lives in arrays of ours, zeroed before this returns: a {@code MessageDigest} keeps the
 * key's padded blocks in buffers of its own that nobody clears. The inner and outer states are
 * computed once, and each of PBKDF2's iterations is then two compressions of one block whose padding
 * never changes, on five words, with no clone, copy or byte conversion.
 */
final class WrappingKeys {
  /** {@code WRAPPING_KEY_LEN}: an AES-256 key. */
  static final int KEY_BYTES = 32;

  /** {@code MIN_PASSPHRASE_LEN} and {@code MAX_PASSPHRASE_LEN} of OpenZFS. */
  static final int MIN_PASSPHRASE = 8;

  static final int MAX_PASSPHRASE = 512;

  private static final int BLOCK = 64; // SHA-1's block size
  private static final int DIGEST = 20;
  private static final int[] INITIAL = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};

  private WrappingKeys() {}

  /** The salt bytes OpenZFS feeds PBKDF2 for the property value {@code salt}. */
  static byte[] saltBytes(long salt) {
    return ByteBuffer.allocate(Long.BYTES).order(ByteOrder.nativeOrder()).putLong(salt).array();
  }

  /**
   * The wrapping key for {@code passphrase} under the dataset's {@code pbkdf2salt} and {@code
   * pbkdf2iters}; the caller zeroes it after use.
   */
  static byte[] derive(byte[] passphrase, long salt, long iterations) {
    if (passphrase.length < MIN_PASSPHRASE || passphrase.length > MAX_PASSPHRASE) {
      throw new IllegalArgumentException(
          "a ZFS passphrase has " + MIN_PASSPHRASE + " to " + MAX_PASSPHRASE + " bytes");
    }
    if (iterations < 1 || iterations > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("pbkdf2iters " + iterations + " is out of range");
    }
    return pbkdf2HmacSha1(passphrase, saltBytes(salt), (int) iterations, KEY_BYTES);
  }

  /** PBKDF2 (RFC 8018) with HMAC-SHA1; every intermediate buffer is zeroed. */
  static byte[] pbkdf2HmacSha1(byte[] password, byte[] salt, int iterations, int length) {
    int[] schedule = new int[80];
    int[] inner = new int[5]; // SHA-1's state after the key XOR ipad: where every inner hash starts
    int[] outer = new int[5]; // and after the key XOR opad: where every outer hash starts
    int[] state = new int[5];
    int[] u = new int[5];
    int[] t = new int[5];
    byte[] key = new byte[BLOCK];
    byte[] message = Arrays.copyOf(salt, salt.length + 4);
    byte[] block = new byte[DIGEST];
    byte[] out = new byte[length];
    try {
      if (password.length > BLOCK) {
        System.arraycopy(INITIAL, 0, state, 0, 5);
        hash(state, 0, password, schedule);
        toBytes(state, key);
      } else {
        System.arraycopy(password, 0, key, 0, password.length);
      }
      keyed(inner, key, 0x36363636, schedule);
      keyed(outer, key, 0x5c5c5c5c, schedule);
      for (int index = 1, done = 0; done < length; index++) {
        message[salt.length] = (byte) (index >>> 24);
        message[salt.length + 1] = (byte) (index >>> 16);
        message[salt.length + 2] = (byte) (index >>> 8);
        message[salt.length + 3] = (byte) index;
        System.arraycopy(inner, 0, u, 0, 5);
        hash(u, BLOCK, message, schedule);
        hashDigest(u, outer, u, schedule);
        System.arraycopy(u, 0, t, 0, 5);
        for (int i = 1; i < iterations; i++) {
          hashDigest(state, inner, u, schedule);
          hashDigest(u, outer, state, schedule);
          for (int j = 0; j < 5; j++) {
            t[j] ^= u[j];
          }
        }
        toBytes(t, block);
        int n = Math.min(DIGEST, length - done);
        System.arraycopy(block, 0, out, done, n);
        done += n;
      }
      return out;
    } finally {
      Arrays.fill(schedule, 0);
      Arrays.fill(inner, 0);
      Arrays.fill(outer, 0);
      Arrays.fill(state, 0);
      Arrays.fill(u, 0);
      Arrays.fill(t, 0);
      Arrays.fill(key, (byte) 0);
      Arrays.fill(message, (byte) 0);
      Arrays.fill(block, (byte) 0);
    }
  }

  /** {@code state} = SHA-1's state after one block, the key XOR {@code pad} in every word. */
  private static void keyed(int[] state, byte[] key, int pad, int[] schedule) {
    System.arraycopy(INITIAL, 0, state, 0, 5);
    for (int i = 0; i < 16; i++) {
      schedule[i] = word(key, 4 * i) ^ pad;
    }
    compress(state, schedule);
  }

  /**
   * {@code into} = the hash of a 20-byte digest (five words) that follows one block already hashed
   * into {@code from}: one block, whose padding and length are always the same.
   */
  private static void hashDigest(int[] into, int[] from, int[] digest, int[] schedule) {
    System.arraycopy(digest, 0, schedule, 0, 5);
    schedule[5] = 0x80000000;
    Arrays.fill(schedule, 6, 15, 0);
    schedule[15] = (BLOCK + DIGEST) * 8;
    System.arraycopy(from, 0, into, 0, 5);
    compress(into, schedule);
  }

  /** Runs {@code state}, which has hashed {@code before} bytes, over {@code data} and SHA-1's padding. */
  private static void hash(int[] state, long before, byte[] data, int[] schedule) {
    int blocks = (data.length + 9 + BLOCK - 1) / BLOCK;
    byte[] padded = Arrays.copyOf(data, blocks * BLOCK);
    try {
      padded[data.length] = (byte) 0x80;
      long bits = (before + data.length) * 8;
      for (int i = 0; i < 8; i++) {
        padded[padded.length - 1 - i] = (byte) (bits >>> (8 * i));
      }
      for (int b = 0; b < blocks; b++) {
        for (int i = 0; i < 16; i++) {
          schedule[i] = word(padded, b * BLOCK + 4 * i);
        }
        compress(state, schedule);
      }
    } finally {
      Arrays.fill(padded, (byte) 0);
    }
  }

  private static int word(byte[] b, int at) {
    return (b[at] << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8) | (b[at + 3] & 0xff);
  }

  /** The five words of {@code state}, big-endian, as SHA-1 outputs them. */
  private static void toBytes(int[] state, byte[] out) {
    for (int i = 0; i < DIGEST; i++) {
      out[i] = (byte) (state[i >>> 2] >>> (24 - 8 * (i & 3)));
    }
  }

  /** SHA-1's compression function (FIPS 180-4, 6.1.2) of the block in w[0..15]; w[16..79] is scratch. */
  private static void compress(int[] h, int[] w) {
    for (int i = 16; i < 80; i++) {
      w[i] = Integer.rotateLeft(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    }
    int a = h[0];
    int b = h[1];
    int c = h[2];
    int d = h[3];
    int e = h[4];
    // One loop per phase, not one loop choosing each round's function: PBKDF2 runs this 200 000 times
    // a derivation, and C1, which compiles it first (and alone in the test guest's JVMs), neither
    // unswitches nor unrolls, so the choice would cost up to three branches in every round.
    for (int i = 0; i < 20; i++) {
      int next = Integer.rotateLeft(a, 5) + ((b & c) | (~b & d)) + e + 0x5a827999 + w[i];
      e = d;
      d = c;
      c = Integer.rotateLeft(b, 30);
      b = a;
      a = next;
    }
    for (int i = 20; i < 40; i++) {
      int next = Integer.rotateLeft(a, 5) + (b ^ c ^ d) + e + 0x6ed9eba1 + w[i];
      e = d;
      d = c;
      c = Integer.rotateLeft(b, 30);
      b = a;
      a = next;
    }
    for (int i = 40; i < 60; i++) {
      int next = Integer.rotateLeft(a, 5) + ((b & c) | (b & d) | (c & d)) + e + 0x8f1bbcdc + w[i];
      e = d;
      d = c;
      c = Integer.rotateLeft(b, 30);
      b = a;
      a = next;
    }
    for (int i = 60; i < 80; i++) {
      int next = Integer.rotateLeft(a, 5) + (b ^ c ^ d) + e + 0xca62c1d6 + w[i];
      e = d;
      d = c;
      c = Integer.rotateLeft(b, 30);
      b = a;
      a = next;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
  }
}

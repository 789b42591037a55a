package dev.caravan.storage.zfs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * The wrapping key of {@code keyformat=passphrase}, derived as OpenZFS's own tools derive it, so
 * that {@code zfs load-key} with the same passphrase opens what this facade made and the other way
 * round: PBKDF2 with HMAC-SHA1, {@value #KEY_BYTES} bytes out, the passphrase's bytes as the password,
 * and as the salt the 8 bytes of the {@code pbkdf2salt} property's 64-bit value in the host's byte
 * order (the tools pass the address of that integer).
 *
 * <p>HMAC is computed here from SHA-1 directly, so that every buffer derived from the passphrase is
 * one of ours and is zeroed before this returns.
 */
final class WrappingKeys {
  /** {@code WRAPPING_KEY_LEN}: an AES-256 key. */
  static final int KEY_BYTES = 32;

  /** {@code MIN_PASSPHRASE_LEN} and {@code MAX_PASSPHRASE_LEN} of OpenZFS. */
  static final int MIN_PASSPHRASE = 8;

  static final int MAX_PASSPHRASE = 512;

  private static final int BLOCK = 64; // SHA-1's block size
  private static final int DIGEST = 20;

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
    byte[] key = new byte[BLOCK];
    byte[] pad = new byte[BLOCK];
    byte[] u = new byte[DIGEST];
    byte[] t = new byte[DIGEST];
    byte[] out = new byte[length];
    try {
      MessageDigest sha1 = MessageDigest.getInstance("SHA-1");
      if (password.length > BLOCK) {
        sha1.update(password);
        sha1.digest(key, 0, DIGEST);
      } else {
        System.arraycopy(password, 0, key, 0, password.length);
      }
      for (int i = 0; i < BLOCK; i++) {
        pad[i] = (byte) (key[i] ^ 0x36);
      }
      MessageDigest inner = MessageDigest.getInstance("SHA-1");
      inner.update(pad);
      for (int i = 0; i < BLOCK; i++) {
        pad[i] = (byte) (key[i] ^ 0x5c);
      }
      MessageDigest outer = MessageDigest.getInstance("SHA-1");
      outer.update(pad);
      for (int block = 1, done = 0; done < length; block++) {
        MessageDigest h = (MessageDigest) inner.clone();
        h.update(salt);
        h.update(new byte[] {(byte) (block >>> 24), (byte) (block >>> 16), (byte) (block >>> 8), (byte) block});
        hmacFinish(h, outer, u);
        System.arraycopy(u, 0, t, 0, DIGEST);
        for (int i = 1; i < iterations; i++) {
          h = (MessageDigest) inner.clone();
          h.update(u);
          hmacFinish(h, outer, u);
          for (int j = 0; j < DIGEST; j++) {
            t[j] ^= u[j];
          }
        }
        int n = Math.min(DIGEST, length - done);
        System.arraycopy(t, 0, out, done, n);
        done += n;
      }
      return out;
    } catch (NoSuchAlgorithmException | CloneNotSupportedException | java.security.DigestException e) {
      Arrays.fill(out, (byte) 0);
      throw new IllegalStateException("SHA-1 is part of every Java runtime", e);
    } finally {
      Arrays.fill(key, (byte) 0);
      Arrays.fill(pad, (byte) 0);
      Arrays.fill(u, (byte) 0);
      Arrays.fill(t, (byte) 0);
    }
  }

  /** {@code u = H(outer || H(inner-so-far))}, the inner digest written into {@code u} first. */
  private static void hmacFinish(MessageDigest innerDone, MessageDigest outer, byte[] u)
      throws CloneNotSupportedException, java.security.DigestException {
    innerDone.digest(u, 0, DIGEST);
    MessageDigest o = (MessageDigest) outer.clone();
    o.update(u);
    o.digest(u, 0, DIGEST);
  }
}

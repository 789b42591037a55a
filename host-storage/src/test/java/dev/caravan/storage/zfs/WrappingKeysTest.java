package dev.caravan.storage.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import org.junit.jupiter.api.Test;

/**
 * The passphrase-to-wrapping-key derivation against PBKDF2's published vectors and the JDK's own
 * PBKDF2WithHmacSHA1. That {@code zfs load-key} agrees is {@link ZfsEncryptionGuestTest}'s part.
 */
class WrappingKeysTest {
  @Test
  void matchesTheRfc6070Vectors() {
    byte[] password = "password".getBytes(StandardCharsets.US_ASCII);
    byte[] salt = "salt".getBytes(StandardCharsets.US_ASCII);
    assertThat(HexFormat.of().formatHex(WrappingKeys.pbkdf2HmacSha1(password, salt, 1, 20)))
        .isEqualTo("0c60c80f961f0e71f3a9b524af6012062fe037a6");
    assertThat(HexFormat.of().formatHex(WrappingKeys.pbkdf2HmacSha1(password, salt, 4096, 20)))
        .isEqualTo("4b007901b765489abead49d926f721d065a429c1");
    assertThat(HexFormat.of().formatHex(WrappingKeys.pbkdf2HmacSha1(
            "passwordPASSWORDpassword".getBytes(StandardCharsets.US_ASCII),
            "saltSALTsaltSALTsaltSALTsaltSALTsalt".getBytes(StandardCharsets.US_ASCII), 4096, 25)))
        .isEqualTo("3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038");
  }

  @Test
  void agreesWithTheJdkForLongAndShortPassphrasesAndTwoBlocksOfKey() throws Exception {
    String[] passphrases = {"12345678", "correct horse battery staple", "x".repeat(64), "y".repeat(65),
        "z".repeat(512)};
    long[] salts = {1, -1, 0x0123456789abcdefL, Long.MIN_VALUE};
    SecretKeyFactory jdk = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA1");
    for (String p : passphrases) {
      for (long salt : salts) {
        byte[] ours = WrappingKeys.derive(p.getBytes(StandardCharsets.US_ASCII), salt, 1000);
        byte[] theirs = jdk.generateSecret(
            new PBEKeySpec(p.toCharArray(), WrappingKeys.saltBytes(salt), 1000, 256)).getEncoded();
        assertThat(ours).as("%s / %x", p, salt).hasSize(32).isEqualTo(theirs);
      }
    }
  }

  @Test
  void theSaltIsTheIntegersBytesInHostOrder() {
    byte[] bytes = WrappingKeys.saltBytes(0x0102030405060708L);
    assertThat(bytes).containsExactly(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN
        ? new byte[] {8, 7, 6, 5, 4, 3, 2, 1}
        : new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
  }

  @Test
  void refusesWhatZfsRefuses() {
    assertThatThrownBy(() -> WrappingKeys.derive("1234567".getBytes(StandardCharsets.US_ASCII), 1, 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> WrappingKeys.derive(new byte[513], 1, 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> WrappingKeys.derive(new byte[8], 1, 0))
        .isInstanceOf(IllegalArgumentException.class);
  }
}

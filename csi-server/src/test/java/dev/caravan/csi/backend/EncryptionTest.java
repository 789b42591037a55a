package dev.caravan.csi.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The {@code encryption} parameter and the passphrase secret, as every backend reads them. */
class EncryptionTest {
  private static final String SECRET_VALUE = "correct horse battery staple";

  @Test
  void theParameterIsOffUnlessItSaysOn() {
    assertThat(Encryption.mode(Map.of())).isEqualTo(Encryption.Mode.OFF);
    assertThat(Encryption.mode(Map.of("encryption", "off"))).isEqualTo(Encryption.Mode.OFF);
    assertThat(Encryption.mode(Map.of("encryption", "on"))).isEqualTo(Encryption.Mode.ON);
  }

  @Test
  void anUnknownValueIsRefusedNamingTheParameterAndTheKnownValues() {
    for (String value : new String[] {"ON", "true", "aes-256-gcm", ""}) {
      assertThatThrownBy(() -> Encryption.mode(Map.of("encryption", value)))
          .isInstanceOfSatisfying(CsiException.class, e -> {
            assertThat(e.kind()).isEqualTo(CsiException.Kind.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains("parameters.encryption").contains("known values: off, on");
          });
    }
  }

  @Test
  void aMissingPassphraseIsUnauthenticatedNamingTheSecret() {
    for (Map<String, String> secrets : java.util.List.of(Map.<String, String>of(), Map.of("encryptionPassphrase", ""),
        Map.of("passphrase", SECRET_VALUE))) {
      assertThatThrownBy(() -> Encryption.passphrase("NodeStageVolume", secrets))
          .isInstanceOfSatisfying(CsiException.class, e -> {
            assertThat(e.kind()).isEqualTo(CsiException.Kind.UNAUTHENTICATED);
            assertThat(e.getMessage()).contains("secrets.encryptionPassphrase").contains("NodeStageVolume")
                .doesNotContain(SECRET_VALUE);
          });
    }
  }

  @Test
  void aPassphraseOutsideEightTo512BytesIsInvalidAndNotShown() {
    String shortOne = "1234567";
    String longOne = "p".repeat(513);
    String withNul = "abcd\0efgh";
    for (String bad : new String[] {shortOne, longOne, withNul}) {
      assertThatThrownBy(() -> Encryption.passphrase("CreateVolume", Map.of("encryptionPassphrase", bad)))
          .isInstanceOfSatisfying(CsiException.class, e -> {
            assertThat(e.kind()).isEqualTo(CsiException.Kind.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains("secrets.encryptionPassphrase").contains("8 to 512 bytes")
                .doesNotContain(bad);
          });
    }
    // the bounds themselves are accepted, and counted in UTF-8 bytes
    try (Passphrase eight = Encryption.passphrase("CreateVolume", Map.of("encryptionPassphrase", "12345678"));
        Passphrase most = Encryption.passphrase("CreateVolume", Map.of("encryptionPassphrase", "p".repeat(512)));
        Passphrase fourChars = Encryption.passphrase("CreateVolume", Map.of("encryptionPassphrase", "ééèè"))) {
      assertThat(eight.length()).isEqualTo(8);
      assertThat(most.length()).isEqualTo(512);
      assertThat(fourChars.length()).isEqualTo(8);
    }
    assertThatThrownBy(() -> Encryption.passphrase("CreateVolume", Map.of("encryptionPassphrase", "ééé")))
        .isInstanceOf(CsiException.class);
  }

  @Test
  void thePassphraseHoldsTheBytesUntilClosedThenZeroesThemAndNeverPrintsThem() {
    Passphrase p = Encryption.passphrase("CreateVolume", Map.of("encryptionPassphrase", SECRET_VALUE));
    byte[] held = p.bytes();
    assertThat(new String(held, java.nio.charset.StandardCharsets.UTF_8)).isEqualTo(SECRET_VALUE);
    assertThat(p.toString()).doesNotContain(SECRET_VALUE).doesNotContain("correct");
    VolumeRequest request = new VolumeRequest("v", CapacityRange.UNSPECIFIED, Set.of(AccessType.MOUNT),
        Optional.empty(), Map.of("encryption", "on"), Optional.empty(), java.util.List.of(), java.util.List.of(),
        Optional.of(p));
    assertThat(request.toString()).doesNotContain(SECRET_VALUE);
    assertThat(request.encrypted()).isTrue();
    p.close();
    assertThat(held).containsOnly((byte) 0);
    assertThatThrownBy(p::bytes).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aWrongPassphraseIsUnauthenticatedNamingTheSecretAndTheVolume() {
    CsiException e = Encryption.wrongPassphrase("tank/v1");
    assertThat(e.kind()).isEqualTo(CsiException.Kind.UNAUTHENTICATED);
    assertThat(e.getMessage()).contains("secrets.encryptionPassphrase").contains("tank/v1");
  }

  @Test
  void thePreviousPassphraseIsOptionalAndNothingWhenItEqualsTheCurrentOne() {
    assertThat(Encryption.previousPassphrase(Map.of())).isEmpty();
    assertThat(Encryption.previousPassphrase(Map.of("encryptionPassphrasePrevious", ""))).isEmpty();
    assertThat(Encryption.previousPassphrase(
        Map.of("encryptionPassphrase", SECRET_VALUE, "encryptionPassphrasePrevious", SECRET_VALUE)))
        .as("the same passphrase twice: nothing to rotate").isEmpty();
    Optional<Passphrase> previous = Encryption.previousPassphrase(
        Map.of("encryptionPassphrase", "the next passphrase", "encryptionPassphrasePrevious", SECRET_VALUE));
    assertThat(previous).isPresent();
    try (Passphrase p = previous.get()) {
      assertThat(new String(p.bytes(), java.nio.charset.StandardCharsets.UTF_8)).isEqualTo(SECRET_VALUE);
      assertThat(p.toString()).doesNotContain(SECRET_VALUE);
    }
  }

  @Test
  void aPreviousPassphraseOutsideTheRuleIsInvalidNamingItsKeyAndNotShown() {
    for (String bad : new String[] {"1234567", "p".repeat(513), "abcd\0efgh"}) {
      assertThatThrownBy(() -> Encryption.previousPassphrase(
          Map.of("encryptionPassphrase", SECRET_VALUE, "encryptionPassphrasePrevious", bad)))
          .isInstanceOfSatisfying(CsiException.class, e -> {
            assertThat(e.kind()).isEqualTo(CsiException.Kind.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains("secrets.encryptionPassphrasePrevious").contains("8 to 512 bytes")
                .doesNotContain(bad);
          });
    }
  }

  @Test
  void twoWrongPassphrasesAreUnauthenticatedNamingBothSecretsAndTheVolume() {
    CsiException e = Encryption.wrongPassphrases("tank/v1");
    assertThat(e.kind()).isEqualTo(CsiException.Kind.UNAUTHENTICATED);
    assertThat(e.getMessage()).contains("secrets.encryptionPassphrase ").contains("secrets.encryptionPassphrasePrevious")
        .contains("tank/v1").contains("nothing was changed");
  }
}

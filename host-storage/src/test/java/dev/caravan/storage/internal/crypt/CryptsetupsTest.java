package dev.caravan.storage.internal.crypt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The native copy of a passphrase lives only for the call that needs it. */
class CryptsetupsTest {
  private static final byte[] PASSPHRASE = "s3cret-passphrase".getBytes(StandardCharsets.UTF_8);

  @Test
  void theNativeCopyHoldsThePassphraseDuringTheCallAndZeroesAfter() {
    AtomicReference<MemorySegment> seen = new AtomicReference<>();
    try (Arena arena = Arena.ofConfined()) {
      int rc =
          Cryptsetups.withKey(
              arena,
              PASSPHRASE,
              key -> {
                assertThat(key.asSlice(0, PASSPHRASE.length).toArray(ValueLayout.JAVA_BYTE))
                    .isEqualTo(PASSPHRASE);
                seen.set(key);
                return 7;
              });
      assertThat(rc).isEqualTo(7);
      // Still inside the arena: the memory is readable, and holds zeros only.
      assertThat(seen.get().toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 0);
    }
  }

  @Test
  void theNativeCopyIsZeroedWhenTheCallThrows() {
    AtomicReference<MemorySegment> seen = new AtomicReference<>();
    try (Arena arena = Arena.ofConfined()) {
      assertThatThrownBy(
              () ->
                  Cryptsetups.withKey(
                      arena,
                      PASSPHRASE,
                      key -> {
                        seen.set(key);
                        throw new IllegalStateException("boom");
                      }))
          .hasMessage("boom");
      assertThat(seen.get().toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 0);
    }
  }

  @Test
  void theCallersArrayIsLeftAsItWas() {
    byte[] mine = PASSPHRASE.clone();
    try (Arena arena = Arena.ofConfined()) {
      Cryptsetups.withKey(arena, mine, key -> 0);
    }
    assertThat(mine).isEqualTo(PASSPHRASE);
  }
}

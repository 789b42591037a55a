package dev.caravan.bindings;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.NativeLibraries.Library;
import dev.caravan.bindings.crypt.Cryptsetup;
import dev.caravan.bindings.crypt.crypt_params_luks2;
import dev.caravan.bindings.crypt.crypt_pbkdf_type;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * libcryptsetup writes and reads LUKS2 headers on a regular file without device-mapper: the
 * bindings' functions, structs and constants are checked against the real library that way.
 */
class CryptsetupTest {
  private static final int EPERM = 1;
  private static final int EINVAL = 22;

  @TempDir Path dir;

  @BeforeAll
  static void requireLibcryptsetup() {
    assumeTrue(
        NativeLibraries.isAvailable(Library.CRYPTSETUP),
        () -> NativeLibraries.status(Library.CRYPTSETUP).problem().orElse(""));
  }

  @Test
  void formatsLoadsAndChecksAPassphraseOnAnImageFile() throws IOException {
    Path image = dir.resolve("luks.img");
    try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
      file.setLength(32L << 20);
    }
    byte[] passphrase = "correct horse".getBytes(StandardCharsets.UTF_8);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment path = arena.allocateFrom(image.toString());
      MemorySegment pass = arena.allocateFrom(ValueLayout.JAVA_BYTE, passphrase);

      MemorySegment holder = arena.allocate(ValueLayout.ADDRESS);
      assertThat(Cryptsetup.crypt_init(holder, path)).isZero();
      MemorySegment cd = holder.get(ValueLayout.ADDRESS, 0);
      try {
        assertThat(Cryptsetup.crypt_load(cd, Cryptsetup.CRYPT_LUKS2(), MemorySegment.NULL))
            .isEqualTo(-EINVAL);

        MemorySegment pbkdf = crypt_pbkdf_type.allocate(arena);
        crypt_pbkdf_type.type(pbkdf, Cryptsetup.CRYPT_KDF_ARGON2ID());
        crypt_pbkdf_type.hash(pbkdf, arena.allocateFrom("sha256"));
        crypt_pbkdf_type.iterations(pbkdf, 4);
        crypt_pbkdf_type.max_memory_kb(pbkdf, 32 * 1024);
        crypt_pbkdf_type.parallel_threads(pbkdf, 1);
        crypt_pbkdf_type.flags(pbkdf, Cryptsetup.CRYPT_PBKDF_NO_BENCHMARK());
        MemorySegment params = crypt_params_luks2.allocate(arena);
        crypt_params_luks2.pbkdf(params, pbkdf);
        int formatted =
            Cryptsetup.crypt_format(
                cd,
                Cryptsetup.CRYPT_LUKS2(),
                arena.allocateFrom("aes"),
                arena.allocateFrom("xts-plain64"),
                MemorySegment.NULL,
                MemorySegment.NULL,
                64,
                params);
        assertThat(formatted).isZero();
        assertThat(
                Cryptsetup.crypt_keyslot_add_by_volume_key(
                    cd, Cryptsetup.CRYPT_ANY_SLOT(), MemorySegment.NULL, 0, pass, passphrase.length))
            .isGreaterThanOrEqualTo(0);
      } finally {
        Cryptsetup.crypt_free(cd);
      }

      assertThat(Cryptsetup.crypt_init(holder, path)).isZero();
      cd = holder.get(ValueLayout.ADDRESS, 0);
      try {
        assertThat(Cryptsetup.crypt_load(cd, Cryptsetup.CRYPT_LUKS2(), MemorySegment.NULL))
            .isZero();
        assertThat(Cryptsetup.crypt_get_type(cd).reinterpret(16).getString(0)).isEqualTo("LUKS2");
        // A NULL name checks the passphrase against the key slots without activating anything.
        MemorySegment wrong = arena.allocateFrom(ValueLayout.JAVA_BYTE, new byte[] {'x', 'y'});
        assertThat(
                Cryptsetup.crypt_activate_by_passphrase(
                    cd, MemorySegment.NULL, Cryptsetup.CRYPT_ANY_SLOT(), wrong, 2, 0))
            .isEqualTo(-EPERM);
        assertThat(
                Cryptsetup.crypt_activate_by_passphrase(
                    cd,
                    MemorySegment.NULL,
                    Cryptsetup.CRYPT_ANY_SLOT(),
                    pass,
                    passphrase.length,
                    0))
            .isGreaterThanOrEqualTo(0);
      } finally {
        Cryptsetup.crypt_free(cd);
      }
    }
  }

  @Test
  void statusOfAnUnknownMappingIsInactiveOrInvalid() {
    try (Arena arena = Arena.ofConfined()) {
      int status =
          Cryptsetup.crypt_status(MemorySegment.NULL, arena.allocateFrom("caravan-no-such-map"));
      assertThat(status).isIn(Cryptsetup.CRYPT_INACTIVE(), Cryptsetup.CRYPT_INVALID());
    }
  }
}

package dev.caravan.storage.internal.crypt;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.bindings.crypt.Cryptsetup;
import dev.caravan.bindings.crypt.crypt_active_device;
import dev.caravan.bindings.crypt.crypt_params_luks2;
import dev.caravan.bindings.crypt.crypt_pbkdf_type;
import dev.caravan.bindings.crypt.crypt_set_log_callback$log;
import dev.caravan.storage.NativeLibraryUnavailableException;
import dev.caravan.storage.internal.sys.NativeAccess;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.ToIntFunction;

/**
 * The calls host-storage makes into libcryptsetup. Each returns what the library returns: {@code 0}
 * (or a key slot number) on success, a negative errno on failure ({@code -EPERM}: no key slot opens
 * with the passphrase).
 */
public final class Cryptsetups {
  /** What {@code crypt_status} says about a mapping name. */
  public enum State {
    /** No such mapping, or device-mapper cannot be asked. */
    INVALID,
    INACTIVE,
    ACTIVE,
    /** Active and held open (mounted, say). */
    BUSY
  }

  /**
   * An active mapping: the device its data lives on, its size and where its data starts on the device
   * (both in 512-byte sectors).
   */
  public record Active(String device, long sectors, long offsetSectors, boolean keyInKeyring) {}

  /** PBKDF cost of new key slots: argon2id, benchmarked to {@code timeMs} within the memory cap. */
  public record Pbkdf(int timeMs, int maxMemoryKb, int parallelThreads) {}

  private static final String CIPHER = "aes";
  private static final String CIPHER_MODE = "xts-plain64";
  // aes-xts-plain64 with two 256-bit keys: cryptsetup's LUKS2 default.
  private static final int VOLUME_KEY_BYTES = 64;

  /**
   * Every call into libcryptsetup holds this. Its device-mapper backend keeps process-wide state
   * without a lock (a use count, whose last release closes libdevmapper's control descriptor, and the
   * context its messages go to), so two threads in it at once can end each other's device-mapper
   * connection: an inspection's status read beside its health check was answered "Cannot initialize
   * device-mapper" with the mapping open. The cost: calls queue, a key derivation included.
   */
  private static final ReentrantLock LIBRARY = new ReentrantLock();

  private Cryptsetups() {}

  /** {@code call} into the library, once it is known to load, holding {@link #LIBRARY}. */
  private static <T> T serialized(java.util.function.Supplier<T> call) {
    requireLibrary();
    LIBRARY.lock();
    try {
      return call.get();
    } finally {
      LIBRARY.unlock();
    }
  }

  /** Throws, naming the Debian package, when libcryptsetup cannot be loaded. */
  public static void requireLibrary() {
    NativeAccess.require();
    NativeLibraries.Status status = NativeLibraries.status(NativeLibraries.Library.CRYPTSETUP);
    if (!status.available()) {
      throw new NativeLibraryUnavailableException(
          status.problem().orElse("libcryptsetup is unavailable"));
    }
    LogRouting.install();
  }

  /**
   * Writes a LUKS2 header to {@code device} with a fresh random volume key and one key slot for
   * {@code passphrase}. Does not look at what the device holds: the caller probes first.
   */
  public static int format(String device, byte[] passphrase, Pbkdf pbkdf) {
    return withDevice(
        device,
        (arena, cd) -> {
          MemorySegment params = crypt_params_luks2.allocate(arena);
          crypt_params_luks2.pbkdf(params, pbkdfType(arena, pbkdf));
          int formatted =
              Cryptsetup.crypt_format(
                  cd,
                  Cryptsetup.CRYPT_LUKS2(),
                  arena.allocateFrom(CIPHER),
                  arena.allocateFrom(CIPHER_MODE),
                  MemorySegment.NULL,
                  MemorySegment.NULL,
                  VOLUME_KEY_BYTES,
                  params);
          if (formatted < 0) {
            return formatted;
          }
          return withKey(
              arena,
              passphrase,
              key ->
                  Cryptsetup.crypt_keyslot_add_by_volume_key(
                      cd,
                      Cryptsetup.CRYPT_ANY_SLOT(),
                      MemorySegment.NULL,
                      0,
                      key,
                      passphrase.length));
        });
  }

  /** Whether {@code device} holds a LUKS2 header libcryptsetup can load: 0, or a negative errno. */
  public static int loadLuks2(String device) {
    return withDevice(device, (arena, cd) -> load(cd));
  }

  /**
   * Checks {@code passphrase} against the key slots of the LUKS2 header on {@code device}, without
   * activating anything: the key slot number, or a negative errno.
   */
  public static int verify(String device, byte[] passphrase) {
    return activateByPassphrase(device, null, passphrase);
  }

  /** Opens the mapping {@code name} over the LUKS2 device: the key slot number or a negative errno. */
  public static int activate(String device, String name, byte[] passphrase) {
    return activateByPassphrase(device, Objects.requireNonNull(name, "name"), passphrase);
  }

  /** {@code crypt_activate_by_passphrase}; a null {@code name} only checks the passphrase. */
  private static int activateByPassphrase(String device, String name, byte[] passphrase) {
    return withHeader(
        device,
        (arena, cd) -> {
          MemorySegment mapping = name == null ? MemorySegment.NULL : arena.allocateFrom(name);
          return withKey(
              arena,
              passphrase,
              key ->
                  Cryptsetup.crypt_activate_by_passphrase(
                      cd, mapping, Cryptsetup.CRYPT_ANY_SLOT(), key, passphrase.length, 0));
        });
  }

  /**
   * Adds a key slot for {@code added} to the LUKS2 header on {@code device}, unlocked by {@code
   * existing}, with the work {@code pbkdf} asks for: the new slot's number, or a negative errno
   * ({@code -EPERM}: {@code existing} opens no key slot). The slots already there are untouched.
   */
  public static int addKeySlot(String device, byte[] existing, byte[] added, Pbkdf pbkdf) {
    return withHeader(
        device,
        (arena, cd) -> {
          int costSet = Cryptsetup.crypt_set_pbkdf_type(cd, pbkdfType(arena, pbkdf));
          if (costSet < 0) {
            return costSet;
          }
          return withKey(
              arena,
              existing,
              old ->
                  withKey(
                      arena,
                      added,
                      key ->
                          Cryptsetup.crypt_keyslot_add_by_passphrase(
                              cd,
                              Cryptsetup.CRYPT_ANY_SLOT(),
                              old,
                              existing.length,
                              key,
                              added.length)));
        });
  }

  /**
   * The numbers of the LUKS2 header's active key slots on {@code device}, in order; a negative
   * errno as the only element when the header cannot be loaded.
   */
  public static int[] activeKeySlots(String device) {
    int[][] found = new int[1][];
    int rc =
        withHeader(
            device,
            (arena, cd) -> {
              int max = Cryptsetup.crypt_keyslot_max(Cryptsetup.CRYPT_LUKS2());
              found[0] =
                  java.util.stream.IntStream.range(0, Math.max(0, max))
                      .filter(
                          slot -> {
                            int status = Cryptsetup.crypt_keyslot_status(cd, slot);
                            return status == Cryptsetup.CRYPT_SLOT_ACTIVE()
                                || status == Cryptsetup.CRYPT_SLOT_ACTIVE_LAST();
                          })
                      .toArray();
              return 0;
            });
    return rc < 0 ? new int[] {rc} : found[0];
  }

  /**
   * Checks {@code passphrase} against the one key slot {@code slot}: the slot's number when it
   * opens that slot, a negative errno ({@code -EPERM}) when it does not.
   */
  public static int verifySlot(String device, int slot, byte[] passphrase) {
    return withHeader(
        device,
        (arena, cd) -> {
          return withKey(
              arena,
              passphrase,
              key ->
                  Cryptsetup.crypt_activate_by_passphrase(
                      cd, MemorySegment.NULL, slot, key, passphrase.length, 0));
        });
  }

  /** Wipes the key slot {@code slot} of the LUKS2 header on {@code device}: 0 or a negative errno. */
  public static int destroyKeySlot(String device, int slot) {
    return withHeader(
        device,
        (arena, cd) -> {
          return Cryptsetup.crypt_keyslot_destroy(cd, slot);
        });
  }

  /** Removes the mapping {@code name}: 0, or a negative errno ({@code -EBUSY} while it is open). */
  public static int deactivate(String name) {
    return serialized(() -> {
      try (Arena arena = Arena.ofConfined()) {
        return Cryptsetup.crypt_deactivate(MemorySegment.NULL, arena.allocateFrom(name));
      }
    });
  }

  /** What device-mapper says about {@code name}. */
  public static State state(String name) {
    return serialized(() -> stateOf(name));
  }

  private static State stateOf(String name) {
    try (Arena arena = Arena.ofConfined()) {
      int status = Cryptsetup.crypt_status(MemorySegment.NULL, arena.allocateFrom(name));
      if (status == Cryptsetup.CRYPT_ACTIVE()) {
        return State.ACTIVE;
      }
      if (status == Cryptsetup.CRYPT_BUSY()) {
        return State.BUSY;
      }
      if (status == Cryptsetup.CRYPT_INACTIVE()) {
        return State.INACTIVE;
      }
      return State.INVALID;
    }
  }

  /** The active crypt mapping {@code name}: its device and size; empty when it is not active. */
  public static Optional<Active> active(String name) {
    return serialized(() -> activeOf(name));
  }

  private static Optional<Active> activeOf(String name) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment mapping = arena.allocateFrom(name);
      MemorySegment holder = arena.allocate(ADDRESS);
      if (Cryptsetup.crypt_init_by_name(holder, mapping) < 0) {
        return Optional.empty();
      }
      MemorySegment cd = holder.get(ADDRESS, 0);
      try {
        MemorySegment info = crypt_active_device.allocate(arena);
        if (Cryptsetup.crypt_get_active_device(cd, mapping, info) < 0) {
          return Optional.empty();
        }
        MemorySegment device = Cryptsetup.crypt_get_device_name(cd);
        if (device.equals(MemorySegment.NULL)) {
          return Optional.empty();
        }
        int flags = crypt_active_device.flags(info);
        return Optional.of(
            new Active(
                device.reinterpret(4096).getString(0),
                crypt_active_device.size(info),
                crypt_active_device.offset(info),
                (flags & Cryptsetup.CRYPT_ACTIVATE_KEYRING_KEY()) != 0));
      } finally {
        Cryptsetup.crypt_free(cd);
      }
    }
  }

  /**
   * Grows the mapping {@code name} to the whole of its device. With the volume key in the kernel
   * keyring (LUKS2's default), the new table needs the key again: {@code passphrase} unlocks it
   * into the keyring first, as {@code cryptsetup resize} does.
   */
  public static int resize(String name, byte[] passphrase) {
    return serialized(() -> resizeOf(name, passphrase));
  }

  private static int resizeOf(String name, byte[] passphrase) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment mapping = arena.allocateFrom(name);
      MemorySegment holder = arena.allocate(ADDRESS);
      int init = Cryptsetup.crypt_init_by_name(holder, mapping);
      if (init < 0) {
        return init;
      }
      MemorySegment cd = holder.get(ADDRESS, 0);
      try {
        MemorySegment info = crypt_active_device.allocate(arena);
        int got = Cryptsetup.crypt_get_active_device(cd, mapping, info);
        if (got < 0) {
          return got;
        }
        if ((crypt_active_device.flags(info) & Cryptsetup.CRYPT_ACTIVATE_KEYRING_KEY()) != 0) {
          int unlocked =
              withKey(
                  arena,
                  passphrase,
                  key ->
                      Cryptsetup.crypt_activate_by_passphrase(
                          cd,
                          MemorySegment.NULL,
                          Cryptsetup.CRYPT_ANY_SLOT(),
                          key,
                          passphrase.length,
                          Cryptsetup.CRYPT_ACTIVATE_KEYRING_KEY()));
          if (unlocked < 0) {
            return unlocked;
          }
        }
        return Cryptsetup.crypt_resize(cd, mapping, 0);
      } finally {
        Cryptsetup.crypt_free(cd);
      }
    }
  }

  /** argon2id with sha256, benchmarked to the time asked within the memory and thread caps. */
  private static MemorySegment pbkdfType(Arena arena, Pbkdf pbkdf) {
    MemorySegment pbkdfType = crypt_pbkdf_type.allocate(arena);
    crypt_pbkdf_type.type(pbkdfType, Cryptsetup.CRYPT_KDF_ARGON2ID());
    crypt_pbkdf_type.hash(pbkdfType, arena.allocateFrom("sha256"));
    crypt_pbkdf_type.time_ms(pbkdfType, pbkdf.timeMs());
    crypt_pbkdf_type.max_memory_kb(pbkdfType, pbkdf.maxMemoryKb());
    crypt_pbkdf_type.parallel_threads(pbkdfType, pbkdf.parallelThreads());
    return pbkdfType;
  }

  private static int load(MemorySegment cd) {
    return Cryptsetup.crypt_load(cd, Cryptsetup.CRYPT_LUKS2(), MemorySegment.NULL);
  }

  private interface DeviceCall {
    int apply(Arena arena, MemorySegment cd);
  }

  /** {@link #withDevice}, with the device's LUKS2 header loaded: the load's negative errno when it fails. */
  private static int withHeader(String device, DeviceCall call) {
    return withDevice(device, (arena, cd) -> {
      int loaded = load(cd);
      return loaded < 0 ? loaded : call.apply(arena, cd);
    });
  }

  private static int withDevice(String device, DeviceCall call) {
    return serialized(() -> onDevice(device, call));
  }

  private static int onDevice(String device, DeviceCall call) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment holder = arena.allocate(ADDRESS);
      int init = Cryptsetup.crypt_init(holder, arena.allocateFrom(device));
      if (init < 0) {
        return init;
      }
      MemorySegment cd = holder.get(ADDRESS, 0);
      try {
        return call.apply(arena, cd);
      } finally {
        Cryptsetup.crypt_free(cd);
      }
    }
  }

  /**
   * Runs {@code call} with a native copy of {@code passphrase}, zeroed as soon as the call returns
   * (or throws), before the arena gives the memory back. libcryptsetup keeps no pointer to it: it
   * copies what it needs into its own memory, which it wipes when done.
   */
  static int withKey(Arena arena, byte[] passphrase, ToIntFunction<MemorySegment> call) {
    // At least one byte: a zero-length allocation may alias other memory, and C wants a pointer.
    MemorySegment key = arena.allocate(Math.max(1, passphrase.length));
    try {
      MemorySegment.copy(passphrase, 0, key, JAVA_BYTE, 0, passphrase.length);
      return call.applyAsInt(key);
    } finally {
      key.fill((byte) 0);
    }
  }

  /**
   * libcryptsetup prints its messages on the process's stdout and stderr unless a log callback is
   * set. They go to {@code System.Logger} instead: errors at WARNING, the rest at DEBUG. Its
   * messages name devices and key slots, never a passphrase.
   */
  private static final class LogRouting {
    private static final System.Logger LOG = System.getLogger("dev.caravan.storage.crypt");
    private static boolean installed;

    static synchronized void install() {
      if (installed) {
        return;
      }
      MemorySegment callback =
          crypt_set_log_callback$log.allocate(LogRouting::log, Arena.global());
      Cryptsetup.crypt_set_log_callback(MemorySegment.NULL, callback, MemorySegment.NULL);
      installed = true;
    }

    private static void log(int level, MemorySegment message, MemorySegment unused) {
      String text = message.equals(MemorySegment.NULL) ? "" : message.reinterpret(65536).getString(0);
      LOG.log(
          level == Cryptsetup.CRYPT_LOG_ERROR() ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
          "libcryptsetup: {0}",
          text.strip());
    }
  }
}

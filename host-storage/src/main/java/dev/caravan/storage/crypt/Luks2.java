package dev.caravan.storage.crypt;

import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.HostCapabilities;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.EmptyDevices;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.internal.crypt.Cryptsetups;
import dev.caravan.storage.internal.sys.Errno;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * LUKS2 on a block device, through libcryptsetup in this process (no {@code cryptsetup} process,
 * so a passphrase never appears on a command line or in a child's environment).
 *
 * <p>Passphrases are given as bytes. The caller owns its array; each call copies it into native
 * memory for as long as libcryptsetup needs it and zeroes that copy before returning, whether the
 * call succeeds or not. libcryptsetup wipes its own copies and the volume key it derives.
 *
 * <p>Formatting needs only libcryptsetup; opening, closing, growing and the status of a mapping need
 * device-mapper's crypt target ({@link HostCapabilities#dmCryptProblem()}), and throw {@link
 * CryptUnavailableException} naming what is missing where it is not there.
 */
public final class Luks2 {
  static final Path MAPPER_DIR = Path.of("/dev/mapper");

  /**
   * Where a mapping's data starts on a device {@link #formatIfEmpty} formatted: the LUKS2 header (two
   * copies of the metadata and the key slots area) takes the first 16 MiB. A mapping is that much
   * smaller than its device.
   */
  public static final long HEADER_BYTES = 16L << 20;
  private static final String PREFIX = "caravan-";
  private static final String LUKS_TYPE = "crypto_LUKS";

  /** What {@link #formatIfEmpty} did. */
  public enum FormatOutcome {
    /** The device was empty; it now holds a LUKS2 header with one key slot. */
    FORMATTED,
    /** The device already holds a LUKS2 header; nothing was written. */
    ALREADY_LUKS2
  }

  private Luks2() {}

  /**
   * The mapping name for a volume: {@code caravan-} and 32 hex digits of the SHA-256 of {@code
   * volumeKey}. The same key gives the same name in every process, so a restarted plugin finds the
   * mappings it opened before; the name is valid for device-mapper whatever characters the key has.
   */
  public static String mappingName(String volumeKey) {
    Objects.requireNonNull(volumeKey, "volumeKey");
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(volumeKey.getBytes(StandardCharsets.UTF_8));
      return PREFIX + HexFormat.of().formatHex(digest, 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }

  /**
   * Why LUKS2 mappings cannot be used here, or empty when they can: libcryptsetup must load and the
   * kernel must offer device-mapper's crypt target to a root process.
   */
  public static Optional<String> unavailableReason() {
    Optional<String> kernel = HostCapabilities.current().dmCryptProblem();
    if (kernel.isPresent()) {
      return kernel;
    }
    try {
      Cryptsetups.requireLibrary();
      return Optional.empty();
    } catch (StorageException e) {
      return Optional.of(e.getMessage());
    }
  }

  /**
   * Writes a LUKS2 header with one key slot for {@code passphrase}, of the work {@code cost} asks
   * for, to {@code device} when the device holds nothing. It goes through {@link
   * EmptyDevices#formatIfEmpty}, the step every format of a device takes, which holds the device's
   * lock (a filesystem and a LUKS2 header wanted on one device at once are decided one after the
   * other) and probes through an {@code O_EXCL} descriptor:
   *
   * <ul>
   *   <li>a LUKS2 header is left as it is ({@link FormatOutcome#ALREADY_LUKS2}), whatever
   *       passphrase opens it ({@link #open} checks that) and whatever work its slots record;
   *   <li>any other signature (a filesystem, a partition table, a LUKS1 header) is refused with a
   *       {@link DataPresentException} naming it; so is a device whose probe cannot read it;
   *   <li>a device that is mounted or claimed by another exclusive opener and holds no LUKS2 header
   *       is refused without writing.
   * </ul>
   */
  public static FormatOutcome formatIfEmpty(Path device, byte[] passphrase, KeySlotCost cost) {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(cost, "cost");
    requirePassphrase(passphrase);
    Cryptsetups.requireLibrary();
    Cryptsetups.Pbkdf pbkdf =
        new Cryptsetups.Pbkdf(
            (int) cost.iterTime().toMillis(), cost.memoryKiB(), cost.parallelThreads());
    EmptyDevices.Format luks2 =
        new EmptyDevices.Format() {
          @Override
          public boolean isOn(Path dev, Signature found) {
            return isLuks2(dev, found);
          }

          @Override
          public void writeTo(Path dev) {
            check(Cryptsetups.format(dev.toString(), passphrase, pbkdf), "format as LUKS2", dev);
          }

          @Override
          public String describe(Path dev, Signature found) {
            return found.type().equals(Optional.of(LUKS_TYPE))
                ? "a LUKS header libcryptsetup cannot load as LUKS2"
                : found.describe();
          }
        };
    return EmptyDevices.formatIfEmpty(device, luks2)
        ? FormatOutcome.FORMATTED
        : FormatOutcome.ALREADY_LUKS2;
  }

  /**
   * Opens the mapping {@code name} ({@code /dev/mapper/<name>}) over the LUKS2 header on {@code
   * device} with {@code passphrase}, and returns its path. When it is already open on {@code
   * device}, the passphrase is still checked against the header, and the open mapping is returned.
   *
   * @throws WrongPassphraseException when no key slot opens with {@code passphrase}
   * @throws StorageException when {@code name} is open on another device, or {@code device} holds no
   *     LUKS2 header
   */
  public static Path open(Path device, String name, byte[] passphrase) {
    Objects.requireNonNull(device, "device");
    requireName(name);
    requirePassphrase(passphrase);
    requireUsable();
    Mapping now = status(name);
    if (now.open()) {
      requireOn(now, device);
      check(Cryptsetups.verify(device.toString(), passphrase), "open", device);
      return now.path();
    }
    int rc = Cryptsetups.activate(device.toString(), name, passphrase);
    if (rc == -Errno.EEXIST) {
      // Opened by someone else since we looked: the same answer as finding it open.
      requireOn(status(name), device);
      check(Cryptsetups.verify(device.toString(), passphrase), "open", device);
      return MAPPER_DIR.resolve(name);
    }
    check(rc, "open", device);
    return MAPPER_DIR.resolve(name);
  }

  /**
   * Removes the mapping {@code name}; nothing to do when it is not open.
   *
   * @throws StorageException when it is held open (mounted, say)
   */
  public static void close(String name) {
    requireName(name);
    requireUsable();
    Cryptsetups.State state = Cryptsetups.state(name);
    if (state == Cryptsetups.State.INACTIVE || state == Cryptsetups.State.INVALID) {
      return;
    }
    int rc = Cryptsetups.deactivate(name);
    if (rc == -Errno.ENODEV || rc == -Errno.ENXIO) {
      return;
    }
    if (rc == -Errno.EBUSY) {
      throw new StorageException(
          "cannot close " + MAPPER_DIR.resolve(name) + ": it is in use (mounted, or held open)");
    }
    if (rc < 0) {
      throw new StorageException(
          "libcryptsetup could not close " + MAPPER_DIR.resolve(name) + ": " + Errno.name(-rc));
    }
  }

  /**
   * Grows the open mapping {@code name} to the whole of its device (after the device grew) and
   * returns its new size in bytes. The passphrase unlocks the volume key into the kernel keyring for
   * the new table, as {@code cryptsetup resize} asks for it.
   */
  public static long resize(String name, byte[] passphrase) {
    requireName(name);
    requirePassphrase(passphrase);
    requireUsable();
    Mapping now = status(name);
    if (!now.open()) {
      throw new StorageException("cannot grow " + now.path() + ": it is not open");
    }
    Path device = now.device().orElse(now.path());
    check(Cryptsetups.resize(name, passphrase), "grow the mapping on", device);
    return status(name).sizeBytes();
  }

  /**
   * The key slot of the LUKS2 header on {@code device} that {@code passphrase} opens, or empty when
   * it opens none. Only reads the header: nothing is activated.
   *
   * @throws StorageException when {@code device} holds no LUKS2 header
   */
  public static OptionalInt slotOf(Path device, byte[] passphrase) {
    Objects.requireNonNull(device, "device");
    requirePassphrase(passphrase);
    int rc = Cryptsetups.verify(device.toString(), passphrase);
    if (rc == -Errno.EPERM) {
      return OptionalInt.empty();
    }
    check(rc, "read the key slots of", device);
    return OptionalInt.of(rc);
  }

  /**
   * The numbers of the active key slots of the LUKS2 header on {@code device}, in order.
   *
   * @throws StorageException when {@code device} holds no LUKS2 header
   */
  public static List<Integer> keySlots(Path device) {
    Objects.requireNonNull(device, "device");
    int[] slots = Cryptsetups.activeKeySlots(device.toString());
    if (slots.length == 1 && slots[0] < 0) {
      check(slots[0], "read the key slots of", device);
    }
    return Arrays.stream(slots).boxed().toList();
  }

  /**
   * Adds a key slot for {@code added} to the LUKS2 header on {@code device}, unlocked by {@code
   * existing}, of the work {@code cost} asks for; every slot already there stays, so {@code
   * existing} still opens the volume afterwards. When {@code added} opens a slot already, nothing
   * is written and that slot is returned.
   *
   * @return the key slot {@code added} opens
   * @throws WrongPassphraseException when {@code existing} opens no key slot
   */
  public static int addPassphrase(Path device, byte[] existing, byte[] added, KeySlotCost cost) {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(cost, "cost");
    requirePassphrase(existing);
    requirePassphrase(added);
    OptionalInt already = slotOf(device, added);
    if (already.isPresent()) {
      return already.getAsInt();
    }
    int rc =
        Cryptsetups.addKeySlot(
            device.toString(),
            existing,
            added,
            new Cryptsetups.Pbkdf(
                (int) cost.iterTime().toMillis(), cost.memoryKiB(), cost.parallelThreads()));
    check(rc, "add a key slot to", device);
    return rc;
  }

  /**
   * Destroys the key slot {@code removed} opens on the LUKS2 header of {@code device}, once {@code
   * kept} is checked to open another slot: the header is never left without a slot that {@code
   * kept} opens.
   *
   * @return true when a slot was destroyed, false when {@code removed} opens none (already removed)
   * @throws WrongPassphraseException when {@code kept} opens no key slot, or only the one {@code
   *     removed} opens (the same passphrase)
   */
  public static boolean removePassphrase(Path device, byte[] removed, byte[] kept) {
    Objects.requireNonNull(device, "device");
    requirePassphrase(removed);
    requirePassphrase(kept);
    OptionalInt slot = slotOf(device, removed);
    if (slot.isEmpty()) {
      return false;
    }
    int doomed = slot.getAsInt();
    boolean keptElsewhere = false;
    for (int other : keySlots(device)) {
      if (other != doomed && Cryptsetups.verifySlot(device.toString(), other, kept) >= 0) {
        keptElsewhere = true;
        break;
      }
    }
    if (!keptElsewhere) {
      throw new WrongPassphraseException(device);
    }
    check(Cryptsetups.destroyKeySlot(device.toString(), doomed), "destroy a key slot of", device);
    return true;
  }

  /** Whether the mapping {@code name} is open, whether it is in use, its device and size. */
  public static Mapping status(String name) {
    requireName(name);
    requireUsable();
    Cryptsetups.State state = Cryptsetups.state(name);
    if (state == Cryptsetups.State.INACTIVE || state == Cryptsetups.State.INVALID) {
      return new Mapping(name, false, false, Optional.empty(), 0, 0);
    }
    Optional<Cryptsetups.Active> active = Cryptsetups.active(name);
    return new Mapping(
        name,
        true,
        state == Cryptsetups.State.BUSY,
        active.map(a -> Path.of(a.device())),
        active.map(a -> a.sectors() * 512).orElse(0L),
        active.map(a -> a.offsetSectors() * 512).orElse(0L));
  }

  private static boolean isLuks2(Path device, Signature found) {
    return found.type().equals(Optional.of(LUKS_TYPE))
        && Cryptsetups.loadLuks2(device.toString()) == 0;
  }

  private static void requireOn(Mapping mapping, Path device) {
    Optional<Path> on = mapping.device();
    if (on.isEmpty()
        || !BlockDevices.majorMinor(on.get()).equals(BlockDevices.majorMinor(device))) {
      throw new StorageException(
          mapping.path()
              + " is open on "
              + on.map(Path::toString).orElse("an unknown device")
              + ", not on "
              + device);
    }
  }

  private static void requireUsable() {
    Optional<String> reason = unavailableReason();
    if (reason.isPresent()) {
      throw new CryptUnavailableException("LUKS2 is not usable on this host: " + reason.get());
    }
  }

  private static void requireName(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isEmpty() || name.length() > 127 || name.contains("/") || name.equals(".") || name.equals("..")) {
      throw new IllegalArgumentException("not a device-mapper name: '" + name + "'");
    }
  }

  private static void requirePassphrase(byte[] passphrase) {
    Objects.requireNonNull(passphrase, "passphrase");
    if (passphrase.length == 0) {
      throw new IllegalArgumentException("the passphrase is empty");
    }
  }

  private static void check(int rc, String what, Path device) {
    if (rc >= 0) {
      return;
    }
    if (rc == -Errno.EPERM) {
      throw new WrongPassphraseException(device);
    }
    if (rc == -Errno.EINVAL && what.equals("open")) {
      throw new StorageException(
          "libcryptsetup could not " + what + " " + device + ": it holds no LUKS2 header it can use (EINVAL)");
    }
    throw new StorageException("libcryptsetup could not " + what + " " + device + ": " + Errno.name(-rc));
  }
}

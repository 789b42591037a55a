package dev.caravan.csi.backend;

import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.crypt.CryptUnavailableException;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.crypt.Mapping;
import dev.caravan.storage.crypt.WrongPassphraseException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The LUKS2 mapping of one encrypted volume on this node, as the file and qnap backends keep it: a
 * dm-crypt mapping with a name the backend derives from something that outlives the plugin (the
 * image's path, the LUN's WWID), opened over the volume's block device at stage, grown to that device
 * at expand, closed at unstage. Nothing is asked of device-mapper on a host that has no crypt target:
 * there no mapping can be open.
 *
 * @param volume the volume, whose secrets hold the passphrase when a step needs one
 * @param name the mapping's name, {@code caravan-} and a digest ({@link Luks2#mappingName})
 */
public record LuksMapping(VolumeRef volume, String name) {
  private static final System.Logger LOG = System.getLogger(LuksMapping.class.getName());

  /** Where device-mapper's nodes are: a mapping's device, and a multipath map's, are here. */
  public static final Path MAPPER = Path.of("/dev/mapper");

  /** Whether {@code device} is a node of device-mapper's, where a mapping's device is. */
  public static boolean isMapperDevice(Path device) {
    return device.startsWith(MAPPER);
  }

  /**
   * FAILED_PRECONDITION naming why, when this node cannot open an encrypted volume: checked before
   * anything is attached, so that a node without dm-crypt changes nothing.
   */
  public static void requireCryptFor(VolumeRef volume) {
    Luks2.unavailableReason().ifPresent(why -> {
      throw CsiException.failedPrecondition("volume " + volume.volumeId() + " is encrypted (LUKS2), and this"
          + " node cannot open it: " + why);
    });
  }

  /** The mapping's device node, {@code /dev/mapper/<name>}. */
  public Path path() {
    return MAPPER.resolve(name);
  }

  /** Whether {@code device} is this mapping's device node. */
  public boolean isAt(Path device) {
    return device.equals(path());
  }

  /**
   * Writes a LUKS2 header with {@code key} on {@code device} when it holds no signature at all;
   * FAILED_PRECONDITION naming what it holds otherwise (a volume's data is never formatted over).
   */
  public void formatOnceOn(Path device, Passphrase key, KeySlotCost cost) {
    try {
      Luks2.formatIfEmpty(device, key.bytes(), cost);
    } catch (DataPresentException e) {
      throw CsiException.failedPrecondition("refusing to format " + device + " of encrypted volume "
          + volume.volumeId() + " as LUKS2: it already holds " + e.found());
    }
  }

  /**
   * Opens the mapping over {@code device} with {@code key}, or finds it open there; its device node.
   *
   * @throws WrongPassphraseException when {@code key} opens no key slot of the header
   */
  public Path openOn(Path device, Passphrase key) {
    return Luks2.open(device, name, key.bytes());
  }

  /**
   * Opens the mapping over {@code device} as a stage does, rotating the passphrase when the stage's
   * secrets ask for it. With {@code key}: opened, and a rotation a crash cut short (the new key slot
   * added, the previous one's not yet destroyed) is finished ({@link #finishRotationOn}). When {@code
   * key} opens no key slot and {@code previous} is given, the volume's passphrase becomes {@code key}
   * ({@link #rotateOn}) and the mapping is opened with it.
   *
   * @param afterSlotAdded run between adding {@code key}'s slot and destroying {@code previous}'s:
   *     the caller's crash point, a string literal in the caller's own source
   * @throws CsiException UNAUTHENTICATED when {@code key} does not open the volume and no {@code
   *     previous} is given, or when neither does (then nothing is changed)
   */
  public Path openRotatingOn(Path device, Passphrase key, Optional<Passphrase> previous, KeySlotCost cost,
      Runnable afterSlotAdded) {
    Path mapped;
    try {
      mapped = openOn(device, key);
    } catch (WrongPassphraseException e) {
      if (previous.isEmpty()) {
        throw Encryption.wrongPassphrase(volume.volumeId());
      }
      rotateOn(device, previous.get(), key, cost, afterSlotAdded);
      return openOn(device, key);
    }
    previous.ifPresent(p -> finishRotationOn(device, p, key));
    return mapped;
  }

  /**
   * Sets {@code key} as the passphrase of the LUKS2 header on {@code device} in place of {@code
   * previous}: a key slot for {@code key} is added first, of the work {@code cost} asks for, then
   * {@code previous}'s slot is destroyed, so that one of the two opens the volume at every moment.
   * Only the header changes: no mapping is opened.
   *
   * @param afterSlotAdded run once both slots are there, before {@code previous}'s is destroyed
   * @throws CsiException UNAUTHENTICATED naming both secrets, with nothing changed, when {@code
   *     previous} opens no key slot either
   */
  public void rotateOn(Path device, Passphrase previous, Passphrase key, KeySlotCost cost, Runnable afterSlotAdded) {
    try {
      Luks2.addPassphrase(device, previous.bytes(), key.bytes(), cost);
    } catch (WrongPassphraseException e) {
      throw Encryption.wrongPassphrases(volume.volumeId());
    }
    afterSlotAdded.run();
    Luks2.removePassphrase(device, previous.bytes(), key.bytes());
    LOG.log(System.Logger.Level.INFO, "volume {0}: its passphrase is now secrets.{1}", volume.volumeId(),
        Encryption.SECRET);
  }

  /**
   * Finishes a rotation a crash cut short, once {@code key} is known to open the header on {@code
   * device}: while the header holds more than one key slot, destroys the slot {@code previous} opens,
   * if any. With one key slot there is nothing to finish (and nothing is read but the slot list).
   */
  public void finishRotationOn(Path device, Passphrase previous, Passphrase key) {
    if (Luks2.keySlots(device).size() > 1 && Luks2.removePassphrase(device, previous.bytes(), key.bytes())) {
      LOG.log(System.Logger.Level.INFO, "volume {0}: the key slot of secrets.{1} is destroyed", volume.volumeId(),
          Encryption.PREVIOUS_SECRET);
    }
  }

  /** The mapping as device-mapper has it, when it is open. */
  public Optional<Mapping> ifOpen() {
    if (Luks2.unavailableReason().isPresent()) {
      return Optional.empty();
    }
    try {
      Mapping m = Luks2.status(name);
      return m.open() ? Optional.of(m) : Optional.empty();
    } catch (CryptUnavailableException e) {
      return Optional.empty();
    }
  }

  /** Whether the mapping is open over a device that {@code isTheVolumes} accepts as the volume's own. */
  public boolean isOpenOn(Predicate<Path> isTheVolumes) {
    return ifOpen().flatMap(Mapping::device).map(isTheVolumes::test).orElse(false);
  }

  /** Closes the mapping if it is open; whether it was. */
  public boolean closeIfOpen() {
    if (ifOpen().isEmpty()) {
      return false;
    }
    Luks2.close(name);
    return true;
  }

  /**
   * Grows the open mapping to the end of its device, when the device grew past it: the passphrase of
   * the volume's secrets is needed again (the volume key lives in the kernel keyring only while a table
   * is loaded), and UNAUTHENTICATED naming the secret of {@code rpc} when it is missing or wrong.
   */
  public void growToItsDevice(String rpc) {
    Optional<Mapping> open = ifOpen();
    if (open.isEmpty() || open.get().device().isEmpty()) {
      return;
    }
    Mapping m = open.get();
    if (m.offsetBytes() + m.sizeBytes() >= BlockDevices.size(m.device().get())) {
      return;
    }
    try (Passphrase key = Encryption.passphrase(rpc, volume.secrets())) {
      Luks2.resize(name, key.bytes());
    } catch (WrongPassphraseException e) {
      throw Encryption.wrongPassphrase(volume.volumeId());
    }
  }

  /**
   * What the claim-chain inspector shows of the mapping: its device node, whether it is open (and why
   * it cannot be, on a host without dm-crypt), and over which device with how many bytes. Never
   * anything of the passphrase or the volume key.
   */
  public Map<String, String> evidence() {
    Map<String, String> e = new LinkedHashMap<>();
    e.put("luks2.mapping", path().toString());
    Optional<String> unavailable = Luks2.unavailableReason();
    if (unavailable.isPresent()) { // no crypt target, so no mapping can be open here
      e.put("luks2.open", "no");
      e.put("luks2.unavailable", unavailable.get());
      return e;
    }
    Optional<Mapping> open;
    try {
      open = ifOpen();
    } catch (RuntimeException ex) { // a device-mapper that does not answer: evidence, not failure
      e.put("luks2.open", "unknown: " + ex.getMessage());
      return e;
    }
    e.put("luks2.open", open.isPresent() ? "yes" : "no");
    open.ifPresent(m -> {
      m.device().ifPresent(d -> e.put("luks2.device", d.toString()));
      e.put("luks2.sizeBytes", Long.toString(m.sizeBytes()));
    });
    return e;
  }
}

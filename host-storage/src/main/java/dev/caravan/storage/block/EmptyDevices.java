package dev.caravan.storage.block;

import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.sys.Errno;
import dev.caravan.storage.internal.sys.NativeAccess;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The one step every format of a block device goes through, whatever it writes (a filesystem, a
 * LUKS2 header): take the device's lock, probe what it holds, and write only when it holds nothing.
 * {@link dev.caravan.storage.fs.Filesystems#formatIfEmpty} and {@link
 * dev.caravan.storage.crypt.Luks2#formatIfEmpty} are built on it, so a filesystem and a LUKS2 header
 * wanted on one device at once are decided one after the other, never both on an empty device.
 */
public final class EmptyDevices {
  /** A format {@link #formatIfEmpty} writes to an empty device. */
  public interface Format {
    /** Whether {@code found} on {@code device} is this format already: then nothing is written. */
    boolean isOn(Path device, Signature found);

    /**
     * Writes the format to {@code device}, which was just probed and holds nothing; runs holding the
     * device's lock, and throws when the format could not be written.
     */
    void writeTo(Path device);

    /** How a refusal names {@code found}, which is not this format: {@link Signature#describe()}. */
    default String describe(Path device, Signature found) {
      return found.describe();
    }
  }

  private EmptyDevices() {}

  /**
   * Writes {@code format} to block device {@code device} only if it holds nothing.
   *
   * <ul>
   *   <li>Calls for one device from threads of this JVM run one at a time, whatever path names the
   *       device and whatever format each writes: the lock belongs to its device number. Of several
   *       concurrent callers one writes; the others then find what it wrote.
   *   <li>The device is probed with libblkid through a descriptor opened with {@code O_EXCL}: its
   *       filesystems, RAID and LVM members, crypto headers and partition tables, damaged ones
   *       included. The format already on it is left as it is ({@code false}); any other signature
   *       is refused with a {@link DataPresentException} naming it.
   *   <li>A device whose first or last MiB, where libblkid looks, cannot be read is refused with an
   *       {@link dev.caravan.storage.UnreadableDeviceException}: what it holds is unknown, and
   *       unknown is never empty.
   *   <li>A device that is mounted, or held open with {@code O_EXCL} by another program, is probed
   *       without the claim: the format already on it is the answer ({@code false}); anything else
   *       it holds is a {@code DataPresentException}; holding nothing, it is refused as in use.
   *       Nothing is written to it.
   * </ul>
   *
   * <p>Not guaranteed: callers in other processes are not serialised with ours; between them only
   * {@code O_EXCL} and the writers' own checks apply.
   *
   * @return true when this call wrote the format, false when the device held it already
   * @throws StorageException when {@code device} is not a block device, or is in use and empty
   */
  public static boolean formatIfEmpty(Path device, Format format) {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(format, "format");
    NativeAccess.require();
    return DeviceLocks.holding(BlockDevices.majorMinor(device), () -> formatLocked(device, format));
  }

  private static boolean formatLocked(Path device, Format format) {
    Signature found;
    try {
      found = Probe.probeExclusive(device);
    } catch (SyscallException e) {
      if (e.errno() != Errno.EBUSY) {
        throw e;
      }
      return inUse(device, format, e);
    }
    if (format.isOn(device, found)) {
      return false;
    }
    if (!found.isEmpty()) {
      throw new DataPresentException(device, format.describe(device, found));
    }
    format.writeTo(device);
    return true;
  }

  /**
   * The device is mounted or claimed: nothing may be written to it, but the format on it is still
   * the answer to "is it formatted?".
   */
  private static boolean inUse(Path device, Format format, SyscallException busy) {
    Signature found = Probe.probe(device);
    if (format.isOn(device, found)) {
      return false;
    }
    if (!found.isEmpty()) {
      throw new DataPresentException(device, format.describe(device, found));
    }
    throw new StorageException(
        "refusing to format "
            + device
            + ": it is in use (mounted, or held open exclusively by another program)",
        busy);
  }
}

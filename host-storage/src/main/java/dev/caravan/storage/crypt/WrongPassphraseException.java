package dev.caravan.storage.crypt;

import dev.caravan.storage.StorageException;
import java.nio.file.Path;

/** No key slot of a LUKS2 header opens with the passphrase given. The message names the device only. */
public final class WrongPassphraseException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final Path device;

  public WrongPassphraseException(Path device) {
    super("no key slot of the LUKS2 header on " + device + " opens with the passphrase given");
    this.device = device;
  }

  public Path device() {
    return device;
  }
}

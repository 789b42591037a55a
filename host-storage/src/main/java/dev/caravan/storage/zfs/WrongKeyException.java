package dev.caravan.storage.zfs;

import dev.caravan.storage.internal.zfs.ZfsErrors;
import java.util.Map;

/**
 * The passphrase given does not open the encryption root: ZFS answered EACCES to loading (or
 * checking) the key derived from it. The message names the dataset, never the passphrase.
 */
public final class WrongKeyException extends ZfsException {
  private static final long serialVersionUID = 1L;

  WrongKeyException(String encryptionRoot) {
    super("load key of", encryptionRoot, ZfsErrors.EACCES, Map.of(), "the passphrase does not open it");
  }
}

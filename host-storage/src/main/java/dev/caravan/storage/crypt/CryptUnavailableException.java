package dev.caravan.storage.crypt;

import dev.caravan.storage.StorageException;

/** LUKS2 mappings cannot be used on this host: the message says why (no dm-crypt, not root, ...). */
public final class CryptUnavailableException extends StorageException {
  private static final long serialVersionUID = 1L;

  public CryptUnavailableException(String message) {
    super(message);
  }
}

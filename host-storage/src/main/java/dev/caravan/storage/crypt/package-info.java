/**
 * LUKS2 through libcryptsetup, in process: format an empty block device, open and close a
 * device-mapper crypt mapping with a passphrase given as bytes, grow it, and say whether it is open
 * and on which device. Start at {@link dev.caravan.storage.crypt.Luks2}.
 */
package dev.caravan.storage.crypt;

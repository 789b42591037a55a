/**
 * Not API. libcryptsetup through its generated bindings: every call takes and returns Java types
 * and a negative errno, and the native copy of a passphrase lives in an arena confined to the one
 * call, zeroed before the arena closes.
 */
package dev.caravan.storage.internal.crypt;

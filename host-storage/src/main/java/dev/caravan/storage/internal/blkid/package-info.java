/** Not API. libblkid through the generated {@code dev.caravan.bindings.blkid.Blkid} bindings. */
package dev.caravan.storage.internal.blkid;

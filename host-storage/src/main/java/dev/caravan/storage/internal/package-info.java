/**
 * Not API. Small helpers the public packages share that are not part of what they offer, beside the
 * wrappers of system calls and C libraries in the packages below this one.
 */
package dev.caravan.storage.internal;

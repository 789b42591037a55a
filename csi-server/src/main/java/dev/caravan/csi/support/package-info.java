/**
 * The bottom floor's helpers every other floor may use: JSON reading and writing, PEM keys and
 * certificates, the build's version, the crash points the crash tests stop the plugin at, and the
 * properties text of the records kept on disk. They use nothing else of csi-server's
 * (docs/layers.md).
 */
package dev.caravan.csi.support;

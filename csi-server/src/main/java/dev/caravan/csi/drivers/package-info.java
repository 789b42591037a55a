/**
 * The one place that knows every backend: a backend by its driver name. It sits above the backends
 * so that they, and the backend API below them, know none of their siblings (docs/layers.md).
 */
package dev.caravan.csi.drivers;

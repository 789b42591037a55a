/**
 * Configuration files: HCL (native syntax) and JSON read into one tree of attributes and blocks that
 * remembers the line of everything, so a bad key or value is reported as {@code file:line: rule}.
 */
package dev.caravan.csi.config;

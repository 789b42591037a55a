package dev.caravan.csi.backend;

/** Outcome of a controller-side expansion. */
public record ExpandResult(long capacityBytes, boolean nodeExpansionRequired) {}

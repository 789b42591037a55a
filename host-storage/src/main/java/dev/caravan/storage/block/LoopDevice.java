package dev.caravan.storage.block;

import java.nio.file.Path;

/**
 * A loop device bound to a backing file. {@code backingFile} is the file's real path as the kernel
 * reports it; the kernel appends {@code " (deleted)"} when the file was removed while attached.
 */
public record LoopDevice(Path device, int number, Path backingFile, boolean readOnly) {}

package dev.caravan.storage;

import java.util.List;

/**
 * A system call failed. Carries the errno both as a number and by name ({@code "EBUSY"}), so
 * callers can branch on {@link #errnoName()} without a table of their own, plus the operation and
 * its arguments as they appear in the message: {@code mount(/dev/loop3, /mnt/x, ext4, 0x0) failed:
 * EBUSY (Device or resource busy)}.
 */
public final class SyscallException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final int errno;
  private final String errnoName;
  private final String operation;
  private final List<String> arguments;

  public SyscallException(
      int errno, String errnoName, String description, String operation, List<String> arguments) {
    super(
        operation
            + "("
            + String.join(", ", arguments)
            + ") failed: "
            + errnoName
            + " ("
            + description
            + ")");
    this.errno = errno;
    this.errnoName = errnoName;
    this.operation = operation;
    this.arguments = List.copyOf(arguments);
  }

  public int errno() {
    return errno;
  }

  public String errnoName() {
    return errnoName;
  }

  public String operation() {
    return operation;
  }

  public List<String> arguments() {
    return arguments;
  }
}

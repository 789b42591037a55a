package dev.caravan.storage.zfs;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.internal.zfs.ZfsErrors;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * A ZFS operation failed in the kernel or in libzfs_core. Carries the operation ({@code
 * "create"}, {@code "snapshot"}, ...), the dataset or pool it was about, the error number by value
 * and by name, and, for the calls that report one error per item (snapshot, destroy snapshots,
 * set properties), each failed item with its error:
 *
 * <pre>snapshot tank/vol@s1: EEXIST (already exists); tank/vol@s1: EEXIST</pre>
 */
public class ZfsException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final String operation;
  private final String dataset;
  private final int errno;

  @SuppressWarnings("serial") // an unmodifiable copy of a LinkedHashMap: serializable in practice
  private final Map<String, String> itemErrors;

  public ZfsException(String operation, String dataset, int errno) {
    this(operation, dataset, errno, Map.of(), null);
  }

  /**
   * @param itemErrors failed item (a dataset, snapshot or property name) to its error name
   * @param hint appended to the message when not null, e.g. {@code "is it open or mounted?"}
   */
  public ZfsException(
      String operation, String dataset, int errno, Map<String, String> itemErrors, String hint) {
    super(message(operation, dataset, errno, itemErrors, hint));
    this.operation = Objects.requireNonNull(operation, "operation");
    this.dataset = Objects.requireNonNull(dataset, "dataset");
    this.errno = errno;
    this.itemErrors = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(itemErrors));
  }

  /** Converts libzfs_core's error nvlist (name to int32 errno) to names, in order. */
  public static Map<String, String> itemErrors(Map<String, Object> errorList) {
    return ZfsErrors.itemNames(errorList);
  }

  /** What was being done: {@code "create"}, {@code "destroy"}, {@code "objset stats"}... */
  public String operation() {
    return operation;
  }

  /** The dataset, snapshot or pool the operation was about. */
  public String dataset() {
    return dataset;
  }

  public int errno() {
    return errno;
  }

  /** {@code "EBUSY"}, {@code "ZFS_ERR_STREAM_TRUNCATED"}, ... */
  public String errnoName() {
    return ZfsErrors.name(errno);
  }

  /** Per-item errors reported by the kernel, item to error name; empty when there were none. */
  public Map<String, String> itemErrors() {
    return itemErrors;
  }

  private static String message(
      String operation, String dataset, int errno, Map<String, String> items, String hint) {
    String description = ZfsErrors.describe(errno);
    StringBuilder message =
        new StringBuilder(operation)
            .append(' ')
            .append(dataset)
            .append(": ")
            .append(ZfsErrors.name(errno));
    if (!description.isEmpty()) {
      message.append(" (").append(description).append(')');
    }
    if (!items.isEmpty()) {
      message
          .append("; ")
          .append(
              items.entrySet().stream()
                  .map(e -> e.getKey() + ": " + e.getValue())
                  .collect(Collectors.joining(", ")));
    }
    if (hint != null) {
      message.append(": ").append(hint);
    }
    return message.toString();
  }
}

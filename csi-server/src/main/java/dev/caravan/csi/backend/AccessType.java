package dev.caravan.csi.backend;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** How a workload uses a volume: as a mounted filesystem or as a raw block device. */
public enum AccessType {
  MOUNT,
  BLOCK;

  /**
   * The volume context key that carries the access types a volume was created for. A volume made for
   * block access only may hold raw data with no signature a probe could see: a mount stage would
   * format it. So the types are fixed at CreateVolume, and the node refuses any other.
   */
  public static final String CONTEXT_KEY = "access";

  /** The context value for {@code types}: {@code block}, {@code mount} or {@code block,mount}. */
  public static String contextValue(Set<AccessType> types) {
    return Stream.of(BLOCK, MOUNT).filter(types::contains).map(AccessType::word).collect(Collectors.joining(","));
  }

  /**
   * The access types a context value names; empty when it names none or something else. Absent from
   * volumes made before the types were recorded: their callers treat those as allowing both.
   */
  public static Optional<Set<AccessType>> fromContextValue(String value) {
    if (value == null || value.isEmpty()) {
      return Optional.empty();
    }
    EnumSet<AccessType> types = EnumSet.noneOf(AccessType.class);
    for (String word : value.split(",", -1)) {
      switch (word) {
        case "mount" -> types.add(MOUNT);
        case "block" -> types.add(BLOCK);
        default -> {
          return Optional.empty();
        }
      }
    }
    return Optional.of(Set.copyOf(types));
  }

  /** The word for this type in a volume context and in messages. */
  public String word() {
    return name().toLowerCase(Locale.ROOT);
  }
}

package dev.caravan.csi.dhv;

import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The operations named in argv[1] and {@code DHV_OPERATION}: Nomad's (publish and unpublish only in
 * deferred mode), and {@code release}, which only an operator runs (docs/dhv-deferred-binding.md §7).
 */
enum Operation {
  FINGERPRINT("fingerprint"),
  CREATE("create"),
  DELETE("delete"),
  PUBLISH("publish"),
  UNPUBLISH("unpublish"),
  RELEASE("release");

  private final String id;

  Operation(String id) {
    this.id = id;
  }

  String id() {
    return id;
  }

  static Optional<Operation> parse(String s) {
    return Arrays.stream(values()).filter(o -> o.id.equals(s)).findFirst();
  }

  static String known() {
    return Arrays.stream(values()).map(Operation::id).collect(Collectors.joining(", "));
  }
}

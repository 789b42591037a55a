package dev.caravan.csi.backend;

/**
 * A failure with a CSI meaning: the services turn {@link #kind()} into the gRPC status code the spec
 * asks for, and {@link #getMessage()} into its description. Thrown by services and backends alike; the
 * message must name the offending field or object and the rule it broke.
 */
public final class CsiException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The CSI error classes Caravan uses (a subset of gRPC codes, named the same). */
  public enum Kind {
    INVALID_ARGUMENT,
    NOT_FOUND,
    ALREADY_EXISTS,
    OUT_OF_RANGE,
    FAILED_PRECONDITION,
    ABORTED,
    RESOURCE_EXHAUSTED,
    UNAVAILABLE,
    UNIMPLEMENTED,
    UNAUTHENTICATED,
    INTERNAL
  }

  private final Kind kind;

  public CsiException(Kind kind, String message) {
    super(message);
    this.kind = kind;
  }

  public CsiException(Kind kind, String message, Throwable cause) {
    super(message, cause);
    this.kind = kind;
  }

  public Kind kind() {
    return kind;
  }

  public static CsiException invalid(String message) {
    return new CsiException(Kind.INVALID_ARGUMENT, message);
  }

  public static CsiException notFound(String message) {
    return new CsiException(Kind.NOT_FOUND, message);
  }

  public static CsiException alreadyExists(String message) {
    return new CsiException(Kind.ALREADY_EXISTS, message);
  }

  public static CsiException outOfRange(String message) {
    return new CsiException(Kind.OUT_OF_RANGE, message);
  }

  public static CsiException failedPrecondition(String message) {
    return new CsiException(Kind.FAILED_PRECONDITION, message);
  }

  public static CsiException internal(String message, Throwable cause) {
    return new CsiException(Kind.INTERNAL, message, cause);
  }
}

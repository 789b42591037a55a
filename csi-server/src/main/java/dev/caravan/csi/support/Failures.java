package dev.caravan.csi.support;

/**
 * The words an unexpected failure is answered with. A caller reads a sentence, never a Java class
 * name or a stack trace: those go to the plugin's log, next to the line that says which call failed.
 */
public final class Failures {
  private Failures() {}

  /**
   * The failure's own message, or, when it has none (a NullPointerException, an EOFException), a
   * sentence saying so and where the details are.
   */
  public static String describe(Throwable failure) {
    String message = failure.getMessage();
    if (message == null || message.isBlank()) {
      return "a failure that gave no reason (the plugin's log has its stack trace)";
    }
    return message;
  }

  /** The innermost cause of {@code failure}: a refused connection, a TLS alert, what the wrappers wrap. */
  public static Throwable rootCause(Throwable failure) {
    Throwable root = failure;
    while (root.getCause() != null) {
      root = root.getCause();
    }
    return root;
  }

  /** {@code internal error: } and {@link #describe}: what INTERNAL answers carry. */
  public static String internal(Throwable failure) {
    return "internal error: " + describe(failure);
  }
}

package dev.caravan.csi.support;

import java.util.Optional;

/**
 * Named steps inside multi-step operations where the kill tests stop the plugin dead, to prove that a
 * crash at any step leaves state that a retry can finish. Off unless the JVM was started with
 * {@code -Dcaravan.crash-at=<step>}: then the process ends, without shutdown hooks or any cleanup,
 * the moment it reaches that step, exactly as a SIGKILL would leave it.
 *
 * <p>Step names are {@code <operation>.<point>}, e.g. {@code stage.after-attach}; {@link #reach} is
 * called with a literal so that the kill tests can list every step by searching the sources.
 */
public final class CrashPoints {
  /** The system property naming the step to die at. */
  public static final String PROPERTY = "caravan.crash-at";
  /** The exit status of a process that died at its crash point: what a shell reports for SIGKILL. */
  public static final int EXIT_STATUS = 137;

  private static final Optional<String> TARGET =
      Optional.ofNullable(System.getProperty(PROPERTY)).filter(s -> !s.isEmpty());

  private CrashPoints() {}

  /** Ends the process at once if {@code step} is the configured crash point; otherwise does nothing. */
  public static void reach(String step) {
    if (TARGET.isPresent() && TARGET.get().equals(step)) {
      System.err.println("caravan: crash point " + step + " reached; halting");
      System.err.flush();
      Runtime.getRuntime().halt(EXIT_STATUS);
    }
  }

  /** Whether a crash point is configured in this JVM. */
  public static boolean armed() {
    return TARGET.isPresent();
  }
}

package dev.caravan.csi;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/** The fixture commands guest tests run to set up and inspect ZFS (zpool, zfs), for every test package. */
public final class GuestCommands {
  private GuestCommands() {}

  /**
   * The command's standard output; "" when a {@code zfs list} finds nothing; an AssertionError naming
   * the command and its standard error when anything else fails or it runs over 120 s.
   */
  public static String run(String... command) {
    try {
      Process p = new ProcessBuilder(command).start();
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError(String.join(" ", command) + " did not finish in 120 s");
      }
      if (p.exitValue() != 0) {
        if (command[0].equals("zfs") && command[1].equals("list")) {
          return "";
        }
        throw new AssertionError(String.join(" ", command) + " failed: " + err);
      }
      return out;
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}

package dev.caravan.csi.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** The fixture commands guest tests run to set up and inspect ZFS (zpool, zfs), for every test package. */
public final class GuestCommands {
  private GuestCommands() {}

  /**
   * The command's standard output; "" when a {@code zfs list} finds nothing; an AssertionError naming
   * the command and its standard error when anything else fails or it runs over 120 s. The outputs go
   * to files, not pipes, so that the time limit holds whatever the command prints or keeps open (a
   * command that forks a daemon keeps a pipe open after it exits), and a full stderr pipe cannot stall it.
   */
  public static String run(String... command) {
    return run(Duration.ofMinutes(2), command);
  }

  /** As {@link #run(String...)}, with {@code bound} instead of two minutes. */
  public static String run(Duration bound, String... command) {
    Path out = null;
    Path err = null;
    try {
      out = Files.createTempFile("guest-command", ".out");
      err = Files.createTempFile("guest-command", ".err");
      Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
      p.getOutputStream().close();
      if (!p.waitFor(bound.toMillis(), TimeUnit.MILLISECONDS)) {
        p.destroyForcibly();
        throw new AssertionError(String.join(" ", command) + " did not finish in " + bound.toSeconds() + " s");
      }
      if (p.exitValue() != 0) {
        if (command[0].equals("zfs") && command[1].equals("list")) {
          return "";
        }
        throw new AssertionError(String.join(" ", command) + " failed: " + Files.readString(err, StandardCharsets.UTF_8).strip());
      }
      return Files.readString(out, StandardCharsets.UTF_8).strip();
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    } finally {
      for (Path f : new Path[] {out, err}) {
        if (f != null) {
          try {
            Files.deleteIfExists(f);
          } catch (IOException e) {
            // a temporary file left behind costs nothing; the command's answer matters more
          }
        }
      }
    }
  }
}

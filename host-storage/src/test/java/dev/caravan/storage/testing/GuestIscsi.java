package dev.caravan.storage.testing;

import dev.caravan.storage.internal.sys.UnixSocket;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The iSCSI world of the guest kernel (scripts/guest-test): LIO target modules and configfs, the
 * open-iscsi initiator (iscsid) and multipathd, started once per test JVM. The guest is a throwaway
 * machine, so this writes /etc/multipath.conf and starts daemons freely; on any other machine the
 * tests that need it skip, saying why.
 *
 * <p>The daemons are fixtures, as a real node would have them running under systemd: the library
 * under test starts neither.
 */
public final class GuestIscsi {
  public static final String PORTAL_1 = "127.0.0.1:3260";
  public static final String PORTAL_2 = "127.0.0.2:3260";

  static final List<String> MODULES =
      List.of(
          "target_core_mod", "target_core_file", "iscsi_target_mod", "iscsi_tcp", "dm_multipath",
          "dm_round_robin", "scsi_dh_alua");
  // Only LIO disks are multipathed (never the guest's virtio disk or zvols), each map named by its
  // WWID, and a map made as soon as a path appears: the QNAP setup page asks the same of nodes.
  static final String MULTIPATH_CONF =
      """
      defaults {
        user_friendly_names no
        find_multipaths no
        polling_interval 2
      }
      blacklist {
        device {
          vendor ".*"
          product ".*"
        }
      }
      blacklist_exceptions {
        device {
          vendor "LIO-ORG"
          product ".*"
        }
      }
      devices {
        device {
          vendor "LIO-ORG"
          product ".*"
          path_grouping_policy multibus
          path_checker tur
          no_path_retry 12
        }
      }
      """;

  private static boolean started;

  private GuestIscsi() {}

  /** Skips the calling test unless the guest's iSCSI world is there, and starts it on first use. */
  public static synchronized void assumeAvailable() {
    HostRequirements.assume(HostRequirements.whyNoIscsi());
    if (!started) {
      start();
      started = true;
    }
  }

  private static void start() {
    List<String> modprobe = new ArrayList<>(List.of("modprobe", "-a"));
    modprobe.addAll(MODULES);
    run(modprobe);
    if (!Files.isDirectory(LioTarget.CONFIGFS)) { // configfs is not mounted yet
      run(List.of("mount", "-t", "configfs", "configfs", "/sys/kernel/config"));
    }
    try {
      Files.writeString(Path.of("/etc/multipath.conf"), MULTIPATH_CONF, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new AssertionError("cannot write /etc/multipath.conf", e);
    }
    if (!answers("ISCSIADM_ABSTRACT_NAMESPACE")) {
      run(List.of("iscsid"));
    }
    if (!answers("/org/kernel/linux/storage/multipathd")) {
      run(List.of("multipathd"));
    }
    awaitSocket("ISCSIADM_ABSTRACT_NAMESPACE");
    awaitSocket("/org/kernel/linux/storage/multipathd");
  }

  private static boolean answers(String abstractName) {
    try (UnixSocket socket = UnixSocket.connectAbstract(abstractName, Duration.ofSeconds(1))) {
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  private static void awaitSocket(String abstractName) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!answers(abstractName)) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("@" + abstractName + " did not come up within 30 s");
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  /**
   * Runs a fixture command (daemons fork and keep no pipe of ours: output is discarded), failing
   * the test when it fails.
   */
  public static void run(List<String> command) {
    try {
      Process process =
          new ProcessBuilder(command)
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .redirectError(ProcessBuilder.Redirect.DISCARD)
              .start();
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError(String.join(" ", command) + " did not finish in 60 s");
      }
      if (process.exitValue() != 0) {
        throw new AssertionError(String.join(" ", command) + " exited " + process.exitValue());
      }
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** Runs a fixture command and returns its standard output (an oracle, e.g. scsi_id). */
  public static String output(List<String> command) {
    try {
      Process process =
          new ProcessBuilder(command)
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
              .redirectError(ProcessBuilder.Redirect.DISCARD)
              .start();
      String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
        throw new AssertionError(String.join(" ", command) + " failed: " + out);
      }
      return out.strip();
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}

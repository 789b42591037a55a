package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code caravan doctor} on this host: each line must say what the host really has, read here
 * independently of the command (this build host has loop devices and ext4, and no ZFS or iSCSI
 * module; the guest has the rest).
 */
class DoctorCommandTest {
  @TempDir Path dir;

  private record Out(int exit, String out) {
    String line(String subject) {
      return out.lines().filter(l -> l.substring(Math.min(5, l.length())).startsWith(subject)).findFirst()
          .orElseThrow(() -> new AssertionError("no line for " + subject + " in\n" + out));
    }

    /** The fix line under the line for {@code subject}. */
    String fix(String subject) {
      var lines = out.lines().toList();
      int i = lines.indexOf(line(subject));
      return i + 1 < lines.size() && lines.get(i + 1).strip().startsWith("fix: ") ? lines.get(i + 1).strip() : "";
    }
  }

  /** doctor with {@code args}, its data directory and mount root under this test's directory. */
  private Out doctor(String... args) {
    String[] all = java.util.Arrays.copyOf(args, args.length + 4);
    all[args.length] = "--data-dir";
    all[args.length + 1] = dir.resolve("data").toString();
    all[args.length + 2] = "--mount-root";
    all[args.length + 3] = dir.resolve("nomad/client/csi").toString();
    return doctorRaw(all);
  }

  private static String status(boolean ok) {
    return ok ? "OK  " : "FAIL";
  }

  @Test
  void reportsWhatThisHostHasAndLacks() throws IOException {
    String filesystems = Files.readString(Path.of("/proc/filesystems"), StandardCharsets.UTF_8);
    boolean ext4 = filesystems.lines().anyMatch(l -> l.endsWith("\text4"));
    boolean loop = Files.exists(Path.of("/dev/loop-control"));
    boolean zfs = Files.exists(Path.of("/sys/module/zfs/version"));
    boolean iscsi = Files.isDirectory(Path.of("/sys/module/iscsi_tcp"));

    Out file = doctor("--driver", "file");
    assertThat(file.line("kernel: ext4")).startsWith(status(ext4));
    assertThat(file.line("path confinement")).startsWith("OK")
        .contains(dev.caravan.storage.mount.ConfinedMounts.mode().description());
    assertThat(file.line("kernel: loop devices")).startsWith(status(loop));
    assertThat(file.line("data directory")).startsWith("OK").contains("will be created below " + dir);
    dev.caravan.csi.node.JournalPlace journal = dev.caravan.csi.node.JournalPlace.of(dir.resolve("data"));
    assertThat(file.line("node journal")).startsWith("OK").contains(journal.dir() + " (" + journal.why() + ")");
    assertThat(file.line("Nomad mount root")).contains("not created yet");
    assertThat(file.line("library libblkid.so.1")).startsWith("OK").containsPattern("loaded /\\S+/libblkid\\.so\\.1");
    assertThat(file.out()).doesNotContain("ZFS").doesNotContain("iscsid");
    java.util.Optional<String> noLuks = dev.caravan.storage.HostCapabilities.current().dmCryptProblem();
    if (noLuks.isPresent()) {
      assertThat(file.line("LUKS2 (encryption=on)")).startsWith("WARN").contains("not usable: " + noLuks.get());
      assertThat(file.fix("LUKS2 (encryption=on)")).contains("modprobe dm_crypt");
    } else {
      assertThat(file.line("LUKS2 (encryption=on)")).startsWith("OK").contains("usable");
    }
    boolean fileFailed = file.out().lines().anyMatch(l -> l.startsWith("FAIL"));
    assertThat(file.exit()).as(file.out()).isEqualTo(fileFailed ? 1 : 0);

    Out local = doctor("--driver", "local", "--pool", "tank");
    assertThat(local.line("kernel: ZFS module")).startsWith(status(zfs));
    if (!zfs) {
      assertThat(local.line("kernel: ZFS module")).contains("not loaded (no /sys/module/zfs/version)");
      assertThat(local.fix("kernel: ZFS module")).contains("apt install zfs-dkms", "modprobe zfs");
      assertThat(local.line("pools")).startsWith("FAIL").contains("[tank]");
      assertThat(local.exit()).isEqualTo(1);
      assertThat(local.out().strip()).endsWith("fix them before deploying --driver local");
    }
    assertThat(local.out()).doesNotContain("kernel: loop devices");

    Out qnap = doctor("--driver", "qnap");
    assertThat(qnap.line("kernel: the iSCSI initiator")).startsWith(status(iscsi));
    if (!iscsi) {
      assertThat(qnap.fix("kernel: the iSCSI initiator")).contains("modprobe iscsi_tcp");
      assertThat(qnap.exit()).isEqualTo(1);
    }
    boolean iscsid = Files.readString(Path.of("/proc/net/unix")).contains(Preflight.ISCSID_SOCKET);
    assertThat(qnap.line("iscsid")).startsWith(status(iscsid));
  }

  @Test
  void aDataDirectoryThatCannotBeWrittenFails() throws IOException {
    Path file = Files.writeString(dir.resolve("data"), "a file, not a directory");
    Out r = doctor("--driver", "file");
    assertThat(Files.isRegularFile(file)).isTrue();
    assertThat(r.line("data directory")).startsWith("FAIL");
    assertThat(r.fix("data directory")).contains("mkdir -p");
    assertThat(r.exit()).isEqualTo(1);
  }

  private Out doctorRaw(String... args) {
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(new Main());
    cli.setOut(new PrintWriter(out, true));
    String[] all = new String[args.length + 1];
    all[0] = "doctor";
    System.arraycopy(args, 0, all, 1, args.length);
    return new Out(cli.execute(all), out.toString());
  }

  @Test
  void checksWhatTheServeConfigSetsAndFlagsWin() throws IOException {
    Path data = dir.resolve("from-config/data");
    Path root = dir.resolve("from-config/nomad/csi");
    Path config = Files.writeString(dir.resolve("caravan.hcl"), """
        driver       = "local"
        data_dir     = "%s"
        allowed_root = ["%s", "/elsewhere"]
        local {
          pools = ["tank2", "fast"]
        }
        """.formatted(data, root));

    Out fromConfig = doctorRaw("--config", config.toString());
    assertThat(fromConfig.out()).startsWith("caravan doctor --driver local");
    assertThat(fromConfig.line("data directory")).contains(data.toString());
    assertThat(fromConfig.line("Nomad mount root")).contains(root.toString());
    assertThat(fromConfig.line("pools")).contains("[tank2, fast]");

    Out flagsWin = doctorRaw("--config", config.toString(), "--driver", "file", "--data-dir",
        dir.resolve("flag").toString());
    assertThat(flagsWin.out()).startsWith("caravan doctor --driver file").doesNotContain("pools");
    assertThat(flagsWin.line("data directory")).contains(dir.resolve("flag").toString());
    assertThat(flagsWin.line("Nomad mount root")).contains(root.toString());
  }

  @Test
  void aConfigServeWouldRefuseIsAUsageError() throws IOException {
    Path unknownKey = Files.writeString(dir.resolve("bad.hcl"), "driver = \"file\"\nno_such_key = 1\n");
    assertThat(doctorRaw("--config", unknownKey.toString()).exit()).isEqualTo(2);
    Path badPool = Files.writeString(dir.resolve("pool.hcl"), "driver = \"local\"\nlocal {\n  pools = [\"9bad\"]\n}\n");
    Out r = doctorRaw("--config", badPool.toString());
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.out()).doesNotContain("kernel");
  }

  @Test
  void anUnknownDriverIsAUsageError() {
    assertThat(doctor("--driver", "nfs").exit()).isEqualTo(2);
  }

  /**
   * With a config naming the appliance, doctor reads every Caravan target's Default Policy there: one
   * that admits initiators its ACL does not list fails the check, naming the target.
   */
  @Test
  void qnapReportsATargetWhoseDefaultPolicyAdmitsEveryone() throws IOException {
    try (dev.caravan.csi.backend.qnap.SimulatedAppliance nas = dev.caravan.csi.backend.qnap.SimulatedAppliance.start(dir)) {
      java.util.Map<String, String> options = nas.options(java.util.List.of("192.0.2.10"), java.util.Map.of());
      String vol;
      try (dev.caravan.csi.backend.qnap.QnapBackend b = dev.caravan.csi.backend.qnap.QnapBackend.open(
          new dev.caravan.csi.backend.BackendConfig("iqn.2026-01.dev.caravan.test:doctor", dir, options,
              dev.caravan.csi.backend.NodeUsage.none()))) {
        vol = b.controller().createVolume(new dev.caravan.csi.backend.VolumeRequest("doc",
            new dev.caravan.csi.backend.CapacityRange(1L << 30, 0), java.util.Set.of(dev.caravan.csi.backend.AccessType.MOUNT),
            java.util.Optional.of("ext4"), java.util.Map.of(), java.util.Optional.empty(), java.util.List.of(),
            java.util.List.of())).id();
      }
      Path config = dir.resolve("caravan.hcl");
      Files.writeString(config, "driver = \"qnap\"\nqnap {\n  url = \"" + options.get("url") + "\"\n  transport = \"cgi\"\n"
          + "  portals = [\"192.0.2.10\"]\n  credentials_file = \"" + options.get("credentials-file") + "\"\n}\n");

      Out fenced = doctor("--driver", "qnap", "--config", config.toString());
      assertThat(fenced.line("appliance fence")).startsWith("OK  ").contains("every Caravan target");

      nas.openDefaultPolicy(vol);
      Out open = doctor("--driver", "qnap", "--config", config.toString());
      assertThat(open.line("appliance fence")).startsWith("FAIL").contains(dev.caravan.csi.backend.qnap.SimulatedAppliance
          .lunName(vol)).contains("Default Policy");
      assertThat(open.fix("appliance fence")).contains("Deny Access");
      assertThat(open.exit()).isEqualTo(1);
    }
  }
}

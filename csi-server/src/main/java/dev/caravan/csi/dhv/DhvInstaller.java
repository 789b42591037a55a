package dev.caravan.csi.dhv;

import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.storage.file.AtomicFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Writes the plugin executables into Nomad's {@code host_volume_plugin_dir}: one small {@code /bin/sh}
 * wrapper per driver and mode, a regular file inside the directory (Nomad 2.0.1+ refuses a symlink
 * that leaves it). Nomad runs it with an empty environment, gives {@code fingerprint} one second and
 * SIGKILLs only its direct child, so the wrapper answers {@code fingerprint} itself, sets {@code PATH}
 * for the few tools (mkfs, resize2fs), and {@code exec}s the JVM by absolute path, making the JVM that
 * child.
 *
 * @param java absolute path of the {@code java} launcher
 * @param classPath the class path holding Caravan (its jar)
 * @param dataDir where the backend and the DHV records live
 * @param options backend options passed on as {@code --option key=value}
 * @param passphraseFile where encrypted volumes' passphrase is ({@code encryption=on}): a file only its
 *     owner can read, named in the executable (never its content)
 * @param keyCosts the key derivation work of new encrypted volumes, as {@code caravan serve} takes it
 *     ({@code --luks-iter-time}, {@code --zfs-pbkdf2-iters}); named in the executable when not the default
 */
public record DhvInstaller(Path java, String classPath, Path dataDir, Map<String, String> options,
    Optional<Path> passphraseFile, KeyCosts keyCosts) {
  /** The JVM options of a one-call process: starts fast, writes nothing to standard output. */
  static final List<String> JVM_OPTIONS = List.of("--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC",
      "-XX:TieredStopAtLevel=1", "-Xss512k", "-XX:MaxRAM=256m", "-Xlog:disable", "-Xlog:all=warning:stderr");

  public DhvInstaller {
    options = Map.copyOf(new TreeMap<>(options));
    if (!java.isAbsolute() || !dataDir.isAbsolute()) {
      throw new IllegalArgumentException("the java launcher and the data directory must be absolute paths");
    }
    passphraseFile.flatMap(PassphraseFile::problem).ifPresent(why -> {
      throw new IllegalArgumentException("--passphrase-file: " + why);
    });
  }

  /** An installer whose encrypted volumes take the default key costs. */
  public DhvInstaller(Path java, String classPath, Path dataDir, Map<String, String> options,
      Optional<Path> passphraseFile) {
    this(java, classPath, dataDir, options, passphraseFile, KeyCosts.DEFAULT);
  }

  /** An installer whose plugins refuse {@code encryption=on} (no passphrase file). */
  public DhvInstaller(Path java, String classPath, Path dataDir, Map<String, String> options) {
    this(java, classPath, dataDir, options, Optional.empty());
  }

  /** The plugin id (file name) of {@code driver} in {@code mode}: {@code caravan-file}, {@code caravan-file-deferred}. */
  public static String pluginId(String driver, Mode mode) {
    return "caravan-" + driver + (mode == Mode.DEFERRED ? "-deferred" : "");
  }

  /**
   * Writes both modes' executables for {@code driver} into {@code pluginDir}; returns their paths.
   *
   * @throws IllegalArgumentException for qnap without a credentials file only root can read, or with
   *     an option that would put a secret into the executable (and so on the JVM's command line)
   */
  public List<Path> install(Path pluginDir, String driver) {
    if (driver.equals("qnap")) {
      checkQnapCredentials();
    }
    try {
      Files.createDirectories(pluginDir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + pluginDir, e);
    }
    List<Path> written = new ArrayList<>();
    for (Mode mode : Mode.values()) {
      Path file = pluginDir.resolve(pluginId(driver, mode));
      if (Files.isDirectory(file, LinkOption.NOFOLLOW_LINKS)) {
        throw new IllegalStateException(file + " is a directory; not replacing it");
      }
      // Written beside and renamed over: a symlink there is replaced, never followed.
      AtomicFiles.write(file, script(driver, mode).getBytes(StandardCharsets.UTF_8));
      try {
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
      } catch (IOException e) {
        throw new UncheckedIOException("cannot make " + file + " executable", e);
      }
      written.add(file);
    }
    return written;
  }

  /**
   * Nomad runs a plugin with an empty environment, so the appliance's credentials can only come from
   * {@code credentials-file}: its path is written into the executable, never its content. The file
   * must exist and be readable by its owner alone, as {@code caravan serve}'s is meant to be.
   */
  private void checkQnapCredentials() {
    List<String> secretLike = options.keySet().stream()
        .filter(k -> k.contains("password") || k.contains("user") || k.contains("chap")).sorted().toList();
    if (!secretLike.isEmpty()) {
      throw new IllegalArgumentException("--option " + secretLike + ": the qnap DHV plugin takes the appliance's"
          + " user and password from credentials-file only (an option is written into the executable and shows"
          + " on the JVM's command line), and CHAP is not supported (a DHV operation receives no secrets)");
    }
    String file = options.get("credentials-file");
    if (file == null || !Path.of(file).isAbsolute()) {
      throw new IllegalArgumentException("the qnap DHV plugin needs --option credentials-file=/absolute/path, a"
          + " properties file with user and password readable by root only: Nomad runs plugins with an empty"
          + " environment, so CARAVAN_QNAP_USER and CARAVAN_QNAP_PASSWORD cannot reach them");
    }
    Path creds = Path.of(file);
    try {
      Set<PosixFilePermission> perms = Files.getPosixFilePermissions(creds);
      if (perms.stream().anyMatch(p -> p.name().startsWith("GROUP") || p.name().startsWith("OTHERS"))) {
        throw new IllegalArgumentException("credentials-file " + creds + " has mode "
            + PosixFilePermissions.toString(perms) + "; it holds the appliance's password: chmod 600 it");
      }
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read credentials-file " + creds + ": " + e.getMessage(), e);
    }
  }

  String script(String driver, Mode mode) {
    List<String> command = new ArrayList<>();
    command.add(java.toString());
    command.addAll(JVM_OPTIONS);
    command.addAll(List.of("-cp", classPath, DhvMain.class.getName(), "--driver", driver, "--mode", mode.id(),
        "--data-dir", dataDir.toString()));
    passphraseFile.ifPresent(f -> command.addAll(List.of("--passphrase-file", f.toString())));
    if (!keyCosts.luks().iterTime().equals(KeyCosts.DEFAULT.luks().iterTime())) {
      command.addAll(List.of("--luks-iter-time", Long.toString(keyCosts.luks().iterTime().toMillis())));
    }
    if (keyCosts.luks().memoryKiB() != KeyCosts.DEFAULT.luks().memoryKiB()) {
      command.addAll(List.of("--luks-pbkdf-memory", Integer.toString(keyCosts.luks().memoryKiB())));
    }
    if (!keyCosts.zfs().equals(KeyCosts.DEFAULT.zfs())) {
      command.addAll(List.of("--zfs-pbkdf2-iters", Long.toString(keyCosts.zfs().count())));
    }
    options.forEach((k, v) -> command.addAll(List.of("--option", k + "=" + v)));
    StringBuilder exec = new StringBuilder("exec");
    for (String arg : command) {
      exec.append(' ').append(quote(arg));
    }
    return "#!/bin/sh\n"
        + "# Caravan Dynamic Host Volume plugin " + pluginId(driver, mode) + " (driver " + driver + ", " + mode.id()
        + " mode).\n"
        + "# Written by `caravan dhv install`; run it again to update. Nomad runs this with an empty\n"
        + "# environment: fingerprint is answered here, without a JVM, within Nomad's 1 s; every other\n"
        + "# operation execs the JVM so that it is the process Nomad waits for and kills.\n"
        + "if [ \"$1\" = fingerprint ]; then\n"
        + "  printf '%s\\n' " + quote(DhvMain.fingerprint(mode)) + "\n"
        + "  exit 0\n"
        + "fi\n"
        + "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
        + "LC_ALL=C.UTF-8\n"
        + "export PATH LC_ALL\n"
        + exec + " \"$@\"\n";
  }

  /** One argument for sh, in single quotes (a quote inside becomes '\''). */
  static String quote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }
}

package dev.caravan.storage.internal.zfs;

import dev.caravan.storage.NativeLibraryUnavailableException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The loaded OpenZFS kernel module's version, checked against the versions whose {@code zfs_cmd_t}
 * {@link ZfsCommand} matches.
 *
 * <p>The kernel copies {@code sizeof(zfs_cmd_t)} bytes in and back out of every command we send.
 * Our layout is written by hand, so a module whose struct is larger would write past the end of our
 * allocation into whatever native memory follows it. That has happened: OpenZFS 2.3.1's {@code
 * zfs_cmd_t} is 16 bytes larger than 2.3.0's and 2.3.2's. So the facade refuses to start on a module
 * it was not verified against rather than trusting that the struct did not change.
 *
 * <p>{@link #VERIFIED} lists the release versions whose headers give exactly the table in {@code
 * native/zfs-cmd/zfs_cmd_t.layout} ({@code native/zfs-cmd/verify-releases} finds them); {@code
 * ZfsCommandTest} checks the list, the table and the Java layout against each other, and against
 * the installed headers where a compiler is present.
 */
public final class ZfsModuleVersion {
  /** Where the zfs module publishes its version, e.g. {@code 2.3.2-2~bpo12+2} on Debian. */
  public static final Path SYSFS = Path.of("/sys/module/zfs/version");

  /** OpenZFS release versions whose {@code zfs_cmd_t} is exactly {@link ZfsCommand#LAYOUT}. */
  public static final Set<String> VERIFIED =
      Set.of(
          "2.2.0", "2.2.1", "2.2.2", "2.2.3", "2.2.4", "2.2.5", "2.2.6", "2.2.7", "2.2.8", "2.2.9",
          "2.2.10", "2.2.11", "2.3.0", "2.3.2", "2.3.3", "2.3.4", "2.3.5", "2.3.6", "2.3.7",
          "2.3.8", "2.3.9");

  /** The upstream release at the start of a module version: {@code 2.3.2} in {@code 2.3.2-2~bpo12+2}. */
  private static final Pattern UPSTREAM = Pattern.compile("(\\d+)\\.(\\d+)\\.(\\d+)(?:[-_+~].*)?");

  private ZfsModuleVersion() {}

  /** The content of {@link #SYSFS}, stripped; empty when the file does not exist (no module). */
  public static Optional<String> readLoaded() {
    try {
      return Optional.of(Files.readString(SYSFS, StandardCharsets.UTF_8).strip());
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new NativeLibraryUnavailableException(
          "ZFS is not available on this host: cannot read " + SYSFS + ": " + e.getMessage(), e);
    }
  }

  /** The upstream release of a module version string, if it starts with one. */
  public static Optional<String> upstream(String moduleVersion) {
    Matcher m = UPSTREAM.matcher(moduleVersion.strip());
    return m.matches() ? Optional.of(m.group(1) + "." + m.group(2) + "." + m.group(3)) : Optional.empty();
  }

  /**
   * Returns when {@code moduleVersion} (as in {@link #SYSFS}) is a verified release; otherwise throws,
   * naming the loaded version, the verified ones and what to do.
   */
  public static void requireVerified(String moduleVersion) {
    Optional<String> release = upstream(moduleVersion);
    if (release.isPresent() && VERIFIED.contains(release.get())) {
      return;
    }
    String loaded =
        release.isPresent()
            ? "the loaded OpenZFS kernel module is " + release.get()
            : "the loaded OpenZFS kernel module's version cannot be read";
    throw new NativeLibraryUnavailableException(
        "ZFS is not supported on this host: "
            + loaded
            + " ("
            + SYSFS
            + ": '"
            + moduleVersion.strip()
            + "'), and Caravan's zfs_cmd_t layout is verified only for OpenZFS "
            + describe(VERIFIED)
            + ". Refusing to send it ioctls whose struct size may not match. Run a verified"
            + " OpenZFS version, or check this one's headers with native/zfs-cmd/print-layout"
            + " --check and add it to the verified versions");
  }

  /** The versions, sorted, with consecutive patch releases as ranges: {@code 2.2.0-2.2.11, 2.3.0}. */
  static String describe(Set<String> versions) {
    List<int[]> sorted =
        versions.stream()
            .map(v -> v.split("\\.", -1))
            .map(p -> new int[] {Integer.parseInt(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2])})
            .sorted(
                Comparator.<int[]>comparingInt(v -> v[0])
                    .thenComparingInt(v -> v[1])
                    .thenComparingInt(v -> v[2]))
            .toList();
    List<String> parts = new ArrayList<>();
    for (int i = 0; i < sorted.size(); ) {
      int j = i;
      while (j + 1 < sorted.size()
          && sorted.get(j + 1)[0] == sorted.get(i)[0]
          && sorted.get(j + 1)[1] == sorted.get(i)[1]
          && sorted.get(j + 1)[2] == sorted.get(j)[2] + 1) {
        j++;
      }
      parts.add(j == i ? text(sorted.get(i)) : text(sorted.get(i)) + "-" + text(sorted.get(j)));
      i = j + 1;
    }
    return String.join(", ", parts);
  }

  private static String text(int[] version) {
    return version[0] + "." + version[1] + "." + version[2];
  }
}

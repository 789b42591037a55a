package dev.caravan.csi.scenario;

import dev.caravan.csi.testing.GuestCommands;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A device-mapper device over another block device, the same sectors, except that the given ranges
 * answer every read and write with an I/O error ({@code dm-error}); the rest maps straight through
 * ({@code dm-linear}). For a disk whose first sectors have gone bad. Needs device-mapper, which the
 * guest of {@code scripts/guest-test} has ({@link dev.caravan.storage.testing.HostRequirements#assumeDeviceMapper}).
 */
final class FailingRegions implements AutoCloseable {
  private static final Duration BOUND = Duration.ofSeconds(60);

  private final String name;
  private final Path under;
  private final long sizeBytes;

  private FailingRegions(String name, Path under, long sizeBytes) {
    this.name = name;
    this.under = under;
    this.sizeBytes = sizeBytes;
  }

  /** A sector range, in 512-byte sectors. */
  record Range(long start, long sectors) {}

  /**
   * Maps {@code under}, {@code sizeBytes} long, as {@code /dev/mapper/<name>}, every range in
   * {@code failing} (sorted, apart) an I/O error.
   */
  static FailingRegions create(String name, Path under, long sizeBytes, List<Range> failing) {
    run("dmsetup", "create", name, "--table", table(under, sizeBytes, failing));
    return new FailingRegions(name, under, sizeBytes);
  }

  /** From now on, {@code failing} (sorted, apart) and only those fail; an empty list heals the device. */
  void fail(List<Range> failing) {
    run("dmsetup", "load", name, "--table", table(under, sizeBytes, failing));
    run("dmsetup", "resume", name);
  }

  private static String table(Path under, long sizeBytes, List<Range> failing) {
    List<String> lines = new ArrayList<>();
    long at = 0;
    long end = sizeBytes >> 9;
    for (Range r : failing) {
      if (r.start() > at) {
        lines.add(at + " " + (r.start() - at) + " linear " + under + " " + at);
      }
      lines.add(r.start() + " " + r.sectors() + " error");
      at = r.start() + r.sectors();
    }
    if (at < end) {
      lines.add(at + " " + (end - at) + " linear " + under + " " + at);
    }
    return String.join("\n", lines);
  }

  Path device() {
    return Path.of("/dev/mapper", name);
  }

  @Override
  public void close() {
    run("dmsetup", "remove", name);
  }

  private static void run(String... command) {
    GuestCommands.run(BOUND, command);
  }
}

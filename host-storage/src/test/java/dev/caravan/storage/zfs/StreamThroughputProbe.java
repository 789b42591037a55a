package dev.caravan.storage.zfs;

import dev.caravan.storage.internal.zfs.Lzc;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.Pipe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Measures, in the guest, a full send and receive of a volume filled with incompressible data,
 * three ways in one run: through {@link ZfsStreams} with the bytes passing through Java channels
 * (as they will through gRPC), in process from {@code lzc_send} to {@code lzc_receive} through a
 * kernel pipe ({@link IndependentCopy}), and {@code zfs send | zfs receive} through a shell pipe.
 * Prints wall time, throughput and CPU time; asserts nothing.
 *
 * <pre>
 * scripts/guest-test run -- java --enable-native-access=ALL-UNNAMED -cp CLASSPATH \
 *     dev.caravan.storage.zfs.StreamThroughputProbe [MiB] [rounds]
 * </pre>
 *
 * CPU time: this JVM's user and system time ({@code /proc/self/stat}) for the in-process ways,
 * which includes the kernel's send and receive work done in the calling threads; for the commands,
 * the user and system time of the reaped children (the shell and both {@code zfs} processes).
 */
public final class StreamThroughputProbe {
  private static final long MIB = 1L << 20;
  private static final double TICKS = 100.0; // USER_HZ on Linux

  private StreamThroughputProbe() {}

  public static void main(String[] args) throws Exception {
    long size = (args.length > 0 ? Long.parseLong(args[0]) : 256) * MIB;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    try (Zfs zfs = Zfs.open()) {
      String source = GuestZfs.freshWithDevice("tput-src");
      zfs.createZvol(ZvolSpec.of(source, size).sparse(true));
      Path device = zfs.zvolDevice(source, Duration.ofSeconds(60));
      long filling = System.nanoTime();
      fill(device, size);
      System.out.printf("filled %d MiB of %s in %.1f s%n", size / MIB, source, seconds(System.nanoTime() - filling));
      String snapshot = zfs.snapshot(source, "s1");
      ZfsStreams streams = zfs.streams();
      System.out.printf("estimated full stream: %d bytes%n", streams.full(snapshot).estimatedSize());

      for (int round = 1; round <= rounds; round++) {
        measure("round " + round + " ZfsStreams via Java channels", zfs, target -> {
          Pipe pipe = Pipe.open();
          AtomicReference<Exception> failed = new AtomicReference<>();
          Thread sender =
              Thread.ofPlatform()
                  .start(
                      () -> {
                        try (var sink = pipe.sink()) {
                          streams.full(snapshot).writeTo(sink);
                        } catch (Exception e) {
                          failed.set(e);
                        }
                      });
          try (var in = pipe.source()) {
            streams.receive(target + "@s1", in, Map.of());
          }
          sender.join();
          if (failed.get() != null) {
            throw failed.get();
          }
        });
        measure("round " + round + " lzc_send -> kernel pipe -> lzc_receive", zfs, target ->
            IndependentCopy.run(snapshot, target + "@s1", Map.of()).orThrow(snapshot, target));
        measure("round " + round + " zfs send | zfs receive", zfs, target ->
            GuestZfs.cli("sh", "-c", "zfs send -Lec " + snapshot + " | zfs receive -s -o readonly=on -o volmode=none " + target));
      }
    }
  }

  @FunctionalInterface
  private interface Way {
    void copy(String target) throws Exception;
  }

  private static void measure(String name, Zfs zfs, Way way) throws Exception {
    String target = GuestZfs.fresh("tput-dst");
    long[] before = cpuTicks();
    long started = System.nanoTime();
    way.copy(target);
    long elapsed = System.nanoTime() - started;
    long[] after = cpuTicks();
    long referenced = zfs.properties(target).get("logicalreferenced").map(Property::asLong).orElse(0L);
    double self = (after[0] + after[1] - before[0] - before[1]) / TICKS;
    double children = (after[2] + after[3] - before[2] - before[3]) / TICKS;
    System.out.printf(
        "%-50s %6.2f s  %7.1f MiB/s  cpu: this JVM %5.2f s, child processes %5.2f s%n",
        name, seconds(elapsed), referenced / (double) MIB / seconds(elapsed), self, children);
    ZfsFailures.orThrow(Lzc.destroySnapshots(List.of(target + "@s1")), "destroy", target + "@s1");
    ZfsFailures.orThrow(Lzc.destroy(target), "destroy", target);
  }

  private static void fill(Path device, long size) throws IOException {
    SplittableRandom random = new SplittableRandom(42);
    byte[] chunk = new byte[(int) (4 * MIB)];
    try (FileChannel channel = FileChannel.open(device, StandardOpenOption.WRITE)) {
      for (long offset = 0; offset < size; offset += chunk.length) {
        random.nextBytes(chunk);
        ByteBuffer buffer = ByteBuffer.wrap(chunk);
        while (buffer.hasRemaining()) {
          channel.write(buffer, offset + buffer.position());
        }
      }
      channel.force(true);
    }
  }

  /** utime, stime, cutime, cstime of this process, in clock ticks. */
  private static long[] cpuTicks() throws IOException {
    String stat = Files.readString(Path.of("/proc/self/stat"));
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ", -1);
    // after "pid (comm) ": state is field 3, so utime (14) is index 11
    return new long[] {
      Long.parseLong(fields[11]), Long.parseLong(fields[12]), Long.parseLong(fields[13]), Long.parseLong(fields[14])
    };
  }

  private static double seconds(long nanos) {
    return nanos / 1e9;
  }
}

package dev.caravan.storage.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Loopback ports for servers a test must name before they start (peers that list each other's
 * addresses).
 *
 * <p>A port the kernel hands out for {@code bind(0)} is free only at that instant: it lies in the
 * ephemeral range, so any outgoing connection on the machine (another test's gRPC client, Maven's
 * own) may take it as its local port before the server binds, and the server's bind then fails with
 * EADDRINUSE. Ports here come from below that range, where the kernel never picks a local port by
 * itself; each is probed with a bind, and none is handed out twice by one JVM.
 */
public final class LoopbackPorts {
  private static final int LOWEST = 20000;
  private static final Set<Integer> HANDED_OUT = new HashSet<>();

  private LoopbackPorts() {}

  /** A loopback port nothing listens on now and that the kernel does not give to outgoing connections. */
  public static synchronized int unused() {
    int below = ephemeralLow();
    for (int tries = 0; tries < 1000; tries++) {
      int port = ThreadLocalRandom.current().nextInt(LOWEST, below);
      if (HANDED_OUT.contains(port)) {
        continue;
      }
      try (ServerSocket probe = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        HANDED_OUT.add(port);
        return port;
      } catch (IOException taken) {
        // Someone listens there: try another.
      }
    }
    throw new IllegalStateException("no unused loopback port in [" + LOWEST + ", " + below + ")");
  }

  private static int ephemeralLow() {
    try {
      // Not Files.readString: it reads a file of size 0 (all of procfs) one byte first, and this
      // sysctl answers a read that does not start at offset 0 with end-of-file.
      String range = Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).getFirst().trim();
      int low = Integer.parseInt(range.split("\\s+", 2)[0]);
      if (low <= LOWEST + 1000) {
        throw new IllegalStateException("the ephemeral port range starts at " + low
            + ": no room below it for test servers (see /proc/sys/net/ipv4/ip_local_port_range)");
      }
      return low;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

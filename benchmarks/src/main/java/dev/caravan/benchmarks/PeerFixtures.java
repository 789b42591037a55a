package dev.caravan.benchmarks;

import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** What the peer benchmarks share: a free loopback port, {@code openssl} for their throwaway CA, and cleaning up. */
final class PeerFixtures {
  private PeerFixtures() {}

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** Runs {@code openssl} with {@code args} in {@code dir}; fails with its output when it fails. */
  static void openssl(Path dir, String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("openssl"));
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IllegalStateException("openssl " + String.join(" ", args) + " failed: " + out);
    }
  }

  static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  /** A CreateVolume of an ext4 single-node-writer volume of {@code bytes}; the caller adds a host. */
  static CreateVolumeRequest.Builder createRequest(String name, long bytes) {
    return CreateVolumeRequest.newBuilder()
        .setName(name)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes))
        .addVolumeCapabilities(VolumeCapability.newBuilder()
            .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
            .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)));
  }
}

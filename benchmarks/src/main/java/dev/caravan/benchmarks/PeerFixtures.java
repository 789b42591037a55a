package dev.caravan.benchmarks;

import dev.caravan.benchmarks.harness.Ext4Writer;
import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.storage.testing.LoopbackPorts;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** What the peer benchmarks share: a free loopback port, {@code openssl} for their throwaway CA, and cleaning up. */
final class PeerFixtures {
  private PeerFixtures() {}

  static int freePort() {
    return LoopbackPorts.unused();
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

  /** A throwaway CA for the peers' mTLS: {@code ca.pem} and {@code ca.key} in {@code dir}, valid two days. */
  static void certificateAuthority(Path dir) throws IOException, InterruptedException {
    openssl(dir,
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
        "-subj", "/CN=caravan bench CA", "-keyout", dir.resolve("ca.key").toString(), "-out",
        dir.resolve("ca.pem").toString());
  }

  /**
   * Node {@code id}'s directory {@code dir/id}, holding its key ({@code key.pem}) and a certificate for
   * the name {@code id} ({@code cert.pem}) signed by {@link #certificateAuthority}'s CA in {@code dir}.
   */
  static Path nodeCertificate(Path dir, String id) throws IOException, InterruptedException {
    Path d = dir.resolve(id);
    Files.createDirectories(d);
    openssl(dir,
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=" + id,
        "-keyout", d.resolve("key.pem").toString(), "-out", d.resolve("req.pem").toString());
    Files.writeString(d.resolve("ext.cnf"), "subjectAltName=DNS:" + id + "\n");
    openssl(dir,
        "x509", "-req", "-in", d.resolve("req.pem").toString(), "-CA", dir.resolve("ca.pem").toString(),
        "-CAkey", dir.resolve("ca.key").toString(), "-CAcreateserial", "-days", "2", "-extfile",
        d.resolve("ext.cnf").toString(), "-out", d.resolve("cert.pem").toString());
    return d;
  }

  /** The end of a trial: closes the channels, stops the plugins (2 s each to drain) and deletes {@code dir}. */
  static void stop(List<UnixChannel> channels, List<Plugin> plugins, Path dir) throws IOException {
    channels.forEach(UnixChannel::close);
    for (Plugin p : plugins) {
      p.shutdown(Duration.ofSeconds(2));
    }
    deleteTree(dir);
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
        .addVolumeCapabilities(Ext4Writer.CAPABILITY);
  }
}

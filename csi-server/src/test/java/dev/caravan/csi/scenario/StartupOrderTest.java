package dev.caravan.csi.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.v1.ProbeRequest;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Ready means ready: the CSI socket, which is what the CO probes as soon as it appears, is opened
 * only after everything else the plugin serves is bound; a port that is taken stops the start before
 * the socket ever exists, with a message naming the port.
 */
class StartupOrderTest {
  private PluginFixture f;

  @AfterEach
  void tearDown() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  @Test
  void aTakenHttpPortStopsTheStartBeforeTheCsiSocketExists() throws Exception {
    f = PluginFixture.unstarted();
    Path socketDir = Files.createDirectories(f.socket.getParent());
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        WatchService watch = socketDir.getFileSystem().newWatchService()) {
      socketDir.register(watch, StandardWatchEventKinds.ENTRY_CREATE);
      int port = taken.getLocalPort();
      f.customize = s -> s.withObserve(ObserveSettings.on(HttpSettings.loopback(port)));

      assertThatThrownBy(f::startPlugin)
          .isInstanceOf(IOException.class)
          .hasMessageContaining("127.0.0.1:" + port)
          .hasMessageContaining("--http-listen");

      assertThat(Files.exists(f.socket)).isFalse();
      assertThat(created(watch)).as("files created next to the CSI socket during the failed start").isEmpty();
    }
  }

  @Test
  void whenStartReturnsTheHttpPortIsAlreadyServing() throws Exception {
    f = PluginFixture.start(s -> s.withObserve(ObserveSettings.on(HttpSettings.loopback(0))));
    InetSocketAddress http = f.plugin().observability().httpAddress().orElseThrow();
    try (Socket s = new Socket(http.getAddress(), http.getPort())) {
      assertThat(s.isConnected()).isTrue();
    }
    assertThat(f.identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
  }

  private static List<Path> created(WatchService watch) {
    List<Path> out = new ArrayList<>();
    WatchKey key;
    while ((key = watch.poll()) != null) {
      for (WatchEvent<?> e : key.pollEvents()) {
        if (e.context() instanceof Path p) {
          out.add(p);
        }
      }
      key.reset();
    }
    return out;
  }
}

package dev.caravan.csi.server;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.ProbeRequest;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The CSI socket is the plugin's whole control surface: only its owner may connect, whatever the umask. */
class SocketModeTest {
  private static final MethodHandle UMASK = Linker.nativeLinker().downcallHandle(
      Linker.nativeLinker().defaultLookup().findOrThrow("umask"), FunctionDescriptor.of(JAVA_INT, JAVA_INT));

  @TempDir Path tmp;

  @Test
  void theSocketIsOwnerOnlyEvenUnderAPermissiveUmask() throws Throwable {
    Path socket = tmp.resolve("plugins/alloc/csi.sock");
    int before = (int) UMASK.invokeExact(0);
    CsiServer server;
    try {
      server = CsiServer.start(socket, List.of(new IdentityGrpc.IdentityImplBase() {}));
    } finally {
      int unused = (int) UMASK.invokeExact(before);
    }
    try {
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS)))
          .isEqualTo("rw-------");
      try (var beside = Files.list(socket.getParent())) {
        assertThat(beside.map(p -> p.getFileName().toString()).toList())
            .as("nothing left beside it").containsExactly("csi.sock");
      }
      try (UnixChannel channel = new UnixChannel(socket)) {
        // answered (UNIMPLEMENTED here): the listener serves under the socket's name
        org.assertj.core.api.Assertions.assertThatThrownBy(
                () -> IdentityGrpc.newBlockingStub(channel.channel()).probe(ProbeRequest.getDefaultInstance()))
            .hasMessageContaining("UNIMPLEMENTED");
      }
    } finally {
      server.shutdown(Duration.ofSeconds(1));
    }
    assertThat(socket).doesNotExist();
  }
}

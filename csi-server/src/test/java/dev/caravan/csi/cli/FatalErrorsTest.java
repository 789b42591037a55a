package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.storage.KernelBufferOverrunError;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A kernel buffer overrun on any thread halts the plugin; other failures go on as before. */
class FatalErrorsTest {
  private final List<Integer> halts = new ArrayList<>();
  private final List<Throwable> passedOn = new ArrayList<>();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private final FatalErrors handler = new FatalErrors((t, e) -> passedOn.add(e), halts::add,
      new PrintStream(err, true, StandardCharsets.UTF_8));

  @Test
  void anOverrunEndingAThreadHaltsWithOneLine() throws InterruptedException {
    dieOnAThread(new KernelBufferOverrunError("ioctl ZFS_IOC_OBJSET_STATS (request 0x5a12) wrote past the end"));
    assertThat(halts).containsExactly(70);
    assertThat(passedOn).isEmpty();
    assertThat(err.toString(StandardCharsets.UTF_8)).isEqualTo(
        "caravan: stopping at once: ioctl ZFS_IOC_OBJSET_STATS (request 0x5a12) wrote past the end"
            + System.lineSeparator());
  }

  @Test
  void anOverrunWrappedByAFrameworkStillHalts() throws InterruptedException {
    dieOnAThread(new IllegalStateException("callback failed", new KernelBufferOverrunError("overrun")));
    assertThat(halts).containsExactly(70);
  }

  @Test
  void anyOtherFailureGoesToThePreviousHandler() throws InterruptedException {
    IllegalStateException other = new IllegalStateException("not fatal");
    dieOnAThread(other);
    assertThat(halts).isEmpty();
    assertThat(passedOn).containsExactly(other);
    assertThat(err.size()).isZero();
  }

  private void dieOnAThread(Throwable failure) throws InterruptedException {
    Thread t = Thread.ofPlatform().unstarted(() -> {
      if (failure instanceof Error e) {
        throw e;
      }
      throw (RuntimeException) failure;
    });
    t.setUncaughtExceptionHandler(handler);
    t.start();
    t.join();
  }
}

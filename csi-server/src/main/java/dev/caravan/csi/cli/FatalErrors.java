package dev.caravan.csi.cli;

import dev.caravan.storage.KernelBufferOverrunError;
import java.io.PrintStream;
import java.util.function.IntConsumer;

/**
 * The plugin's last word on a failure that leaves its own memory untrustworthy: a kernel copy-out past
 * the end of an ioctl buffer ({@link KernelBufferOverrunError}). Whichever thread it ends, the process
 * halts at once, without shutdown hooks, printing one line: a plugin that kept serving on memory the
 * kernel overwrote could answer anything, while a dead one is restarted by Nomad and finds its state
 * on the host. Any other uncaught failure goes to the handler that was there before.
 */
final class FatalErrors implements Thread.UncaughtExceptionHandler {
  /** {@code EX_SOFTWARE} from sysexits.h: an internal software error. */
  static final int EXIT_STATUS = 70;

  private final Thread.UncaughtExceptionHandler next;
  private final IntConsumer halt;
  private final PrintStream err;

  FatalErrors(Thread.UncaughtExceptionHandler next, IntConsumer halt, PrintStream err) {
    this.next = next;
    this.halt = halt;
    this.err = err;
  }

  /** Makes this the JVM's default handler, in front of the one already set (if any). */
  static void install() {
    Thread.setDefaultUncaughtExceptionHandler(new FatalErrors(
        Thread.getDefaultUncaughtExceptionHandler(), status -> Runtime.getRuntime().halt(status), System.err));
  }

  @Override
  public void uncaughtException(Thread thread, Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof KernelBufferOverrunError overrun) {
        err.println("caravan: stopping at once: " + overrun.getMessage());
        err.flush();
        halt.accept(EXIT_STATUS);
        return;
      }
    }
    if (next != null) {
      next.uncaughtException(thread, failure);
    } else {
      thread.getThreadGroup().uncaughtException(thread, failure);
    }
  }
}

package dev.caravan.csi.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;

/** One of {@code serve}'s steps run in this JVM: its exit status and what it printed on standard error. */
record ServeRun(ServeCommand serve, int exit, String err) {
  /** Runs {@code step} of {@code serve} with standard error captured. */
  static ServeRun of(ServeCommand serve, Callable<Integer> step) throws Exception {
    PrintStream saved = System.err;
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      int exit = step.call();
      return new ServeRun(serve, exit, err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setErr(saved);
    }
  }

  /** Parses {@code args} and runs the whole of {@code serve} with them. */
  static ServeRun call(String... args) throws Exception {
    ServeCommand serve = ServeCommand.parse(args).orElseThrow();
    return of(serve, serve);
  }
}

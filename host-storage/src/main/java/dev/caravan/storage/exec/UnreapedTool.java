package dev.caravan.storage.exec;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A tool killed after its timeout that had not exited when its call gave up waiting for it: it may
 * still be changing what it was run on.
 *
 * @param exit completes once the process has exited and been reaped
 */
public record UnreapedTool(long pid, List<String> command, CompletableFuture<?> exit) {
  public UnreapedTool {
    command = List.copyOf(command);
  }

  public boolean exited() {
    return exit.isDone();
  }

  /** "process 123 (mkfs.ext4 /dev/loop3)", for messages. */
  public String describe() {
    return "process " + pid + " (" + String.join(" ", command) + ")";
  }
}

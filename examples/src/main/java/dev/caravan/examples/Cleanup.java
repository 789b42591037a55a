package dev.caravan.examples;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Undo actions, run newest first when closed, each one whatever happened to the others: a failed
 * unmount must not stop the detach and the deletes after it. With try-with-resources, a failure
 * here is added to the one that ended the body as suppressed, so neither hides the other.
 */
final class Cleanup implements AutoCloseable {
  /** One undo action. */
  @FunctionalInterface
  interface Action {
    void run() throws Exception;
  }

  private record Named(String description, Action action) {}

  private final Deque<Named> actions = new ArrayDeque<>();

  /** Registers {@code action}, to run before every action registered earlier. */
  void push(String description, Action action) {
    actions.push(new Named(description, action));
  }

  @Override
  public void close() {
    RuntimeException failure = null;
    while (!actions.isEmpty()) {
      Named next = actions.pop();
      try {
        next.action().run();
      } catch (Exception e) {
        RuntimeException wrapped =
            new IllegalStateException("cleanup step failed: " + next.description(), e);
        if (failure == null) {
          failure = wrapped;
        } else {
          failure.addSuppressed(wrapped);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }
}

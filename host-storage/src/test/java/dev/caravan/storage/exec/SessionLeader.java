package dev.caravan.storage.exec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Run by {@code ToolRunnerTest} in a JVM of its own, started by {@code setsid}: runs a tool at a
 * terminal and reports whether this JVM had a controlling terminal while the tool ran and after. A
 * SIGHUP on closing the terminal would end this JVM before it prints its last line.
 */
final class SessionLeader {
  private SessionLeader() {}

  public static void main(String[] args) throws IOException {
    long pid = ProcessHandle.current().pid();
    String[] self = fields(Files.readString(Path.of("/proc/self/stat")));
    if (!self[3].equals(Long.toString(pid)) || !self[4].equals("0")) {
      throw new IllegalStateException(
          "not a session leader without a terminal: " + String.join(" ", self));
    }
    System.out.println("leader without terminal");
    // The tool reads this JVM's tty_nr while the terminal is open.
    ToolResult result =
        ToolRunner.runAtTerminal(
            List.of("cat", "/proc/" + pid + "/stat"), "", Map.of(), Duration.ofSeconds(30));
    System.out.println("tool ran");
    System.out.println("terminal during: " + fields(result.stdout())[4]);
    System.out.println(
        "terminal after: " + fields(Files.readString(Path.of("/proc/self/stat")))[4]);
  }

  // The fields after "pid (comm) ": state, ppid, pgrp, session, tty_nr, ...
  private static String[] fields(String stat) {
    return stat.substring(stat.lastIndexOf(')') + 2).strip().split(" ", -1);
  }
}

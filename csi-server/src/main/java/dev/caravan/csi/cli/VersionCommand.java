package dev.caravan.csi.cli;

import dev.caravan.csi.support.BuildInfo;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code caravan version}. */
@Command(name = "version", description = "Print the version.")
final class VersionCommand implements Callable<Integer> {
  @Override
  public Integer call() {
    System.out.println("caravan " + BuildInfo.version() + " (CSI spec 1.12.0, Java " + Runtime.version() + ")");
    return 0;
  }
}

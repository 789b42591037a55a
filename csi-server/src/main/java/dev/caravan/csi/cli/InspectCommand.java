package dev.caravan.csi.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code caravan inspect VOLUME_ID}: asks the running plugin's HTTP server for the volume's claim
 * chain and prints it (findings first, with the command to run next). Read-only.
 */
@Command(name = "inspect", description = "Show what the running plugin sees at every layer of one volume, and"
    + " where the layers disagree.")
final class InspectCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "VOLUME_ID", description = "CSI volume id, or Nomad volume id with --namespace.")
  String volumeId;

  @Option(names = "--namespace", description = "Nomad namespace: VOLUME_ID is then a Nomad volume id.")
  String namespace;

  @Mixin PluginApi api;

  @Option(names = "--json", description = "Print the raw JSON.")
  boolean json;

  @Override
  public Integer call() throws InterruptedException {
    StringBuilder url = new StringBuilder("/v1/volumes/").append(PluginApi.encode(volumeId)).append("/chain");
    String sep = "?";
    if (namespace != null) {
      url.append(sep).append("namespace=").append(PluginApi.encode(namespace));
      sep = "&";
    }
    if (!json) {
      url.append(sep).append("format=text");
    }
    return api.get(url.toString(), body -> {
      System.out.print(body);
      return 0;
    });
  }
}

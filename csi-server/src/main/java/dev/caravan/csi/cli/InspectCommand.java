package dev.caravan.csi.cli;

import java.io.IOException;
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
    try {
      PluginApi.Answer r = api.get(url.toString());
      if (r.status() == 200) {
        System.out.print(r.body());
        return 0;
      }
      System.err.println("caravan: the plugin answered " + r.status() + ": " + r.body().strip());
      return r.status() == 404 ? 3 : 1;
    } catch (IOException e) {
      System.err.println("caravan: " + e.getMessage());
      return 1;
    }
  }
}

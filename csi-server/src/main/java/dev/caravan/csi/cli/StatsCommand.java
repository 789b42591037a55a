package dev.caravan.csi.cli;

import dev.caravan.csi.support.Json;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code caravan stats [VOLUME]}: the running plugin's usage API ({@code GET /v1/volume-stats}) as a
 * table, one row per volume staged on the node. Read-only.
 */
@Command(name = "stats", description = "Show the usage of the volumes staged on this node (or of one), from the"
    + " running plugin's HTTP server.")
final class StatsCommand implements Callable<Integer> {
  private static final List<String> HEADER =
      List.of("VOLUME", "NOMAD", "ACCESS", "SIZE", "USED", "AVAIL", "USE%", "INODES%", "FILES", "MEASURED", "NOTE");

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", arity = "0..1", paramLabel = "VOLUME",
      description = "CSI volume id, or Nomad volume id with --namespace (default: every staged volume).")
  String volume;

  @Option(names = "--namespace", description = "Nomad namespace: only its volumes, and VOLUME is a Nomad volume id.")
  String namespace;

  @Option(names = "--bytes", description = "Sizes in bytes instead of KiB/MiB/GiB/TiB.")
  boolean bytes;

  @Option(names = "--json", description = "Print the API's JSON as it is.")
  boolean json;

  @Mixin PluginApi api;

  @Override
  public Integer call() throws InterruptedException {
    String path = volume == null ? "/v1/volume-stats" : "/v1/volume-stats/" + PluginApi.encode(volume);
    if (namespace != null) {
      path += "?namespace=" + PluginApi.encode(namespace);
    }
    return api.get(path, this::show);
  }

  private int show(String answer) {
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      out.println(answer.strip());
      out.flush();
      return 0;
    }
    Map<String, Object> body = object(Json.parse(answer));
    List<Map<String, Object>> volumes = new ArrayList<>();
    if (volume == null) {
      for (Object v : (List<?>) body.get("volumes")) {
        volumes.add(object(v));
      }
    } else {
      volumes.add(body);
    }
    if (volumes.isEmpty()) {
      out.println("no volume is staged on node " + body.get("node_id")
          + (namespace == null ? "" : " in namespace " + namespace));
    } else {
      List<List<String>> rows = new ArrayList<>();
      rows.add(HEADER);
      volumes.forEach(v -> rows.add(row(v)));
      print(out, rows);
    }
    out.flush();
    return 0;
  }

  private List<String> row(Map<String, Object> v) {
    String nomad = v.get("nomad_volume_id") == null ? "-" : v.get("nomad_namespace") + "/" + v.get("nomad_volume_id");
    String note = v.get("last_error") != null ? "error: " + v.get("last_error")
        : Boolean.TRUE.equals(v.get("stale")) ? "stale"
        : Boolean.FALSE.equals(v.get("measured")) ? "not measured yet"
        : Boolean.FALSE.equals(v.get("walk_complete")) ? "file count incomplete" : "";
    return List.of(String.valueOf(v.get("volume_id")), nomad, String.valueOf(v.get("access_type")),
        size(v.get("total_bytes")), size(v.get("used_bytes")), size(v.get("available_bytes")),
        percent(v.get("used_bytes"), v.get("total_bytes")), percent(v.get("used_inodes"), v.get("total_inodes")),
        v.get("file_count") == null ? "-" : String.valueOf(v.get("file_count")),
        v.get("statfs_age_seconds") == null ? "-" : age(((Number) v.get("statfs_age_seconds")).doubleValue()),
        note);
  }

  private String size(Object value) {
    if (!(value instanceof Number n)) {
      return "-";
    }
    long b = n.longValue();
    if (bytes || b < 1024) {
      return Long.toString(b);
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double x = b;
    int u = -1;
    while (x >= 1024 && u < units.length - 1) {
      x /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f%s", x, units[u]);
  }

  private static String percent(Object part, Object whole) {
    if (!(part instanceof Number p) || !(whole instanceof Number w) || w.longValue() <= 0) {
      return "-";
    }
    return Math.round(100.0 * p.longValue() / w.longValue()) + "%";
  }

  private static String age(double seconds) {
    long s = Math.round(seconds);
    return s < 120 ? s + "s ago" : s < 7200 ? s / 60 + "m ago" : s / 3600 + "h ago";
  }

  /** Columns as wide as their widest cell, two spaces apart; the last column unpadded. */
  private static void print(PrintWriter out, List<List<String>> rows) {
    int columns = rows.getFirst().size();
    int[] width = new int[columns];
    for (List<String> row : rows) {
      for (int i = 0; i < columns; i++) {
        width[i] = Math.max(width[i], row.get(i).length());
      }
    }
    for (List<String> row : rows) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < columns; i++) {
        line.append(i == columns - 1 ? row.get(i) : String.format(Locale.ROOT, "%-" + width[i] + "s  ", row.get(i)));
      }
      out.println(line.toString().stripTrailing());
    }
  }

  @SuppressWarnings("unchecked") // the API's objects are JSON objects
  private static Map<String, Object> object(Object o) {
    return (Map<String, Object>) o;
  }
}

package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.drivers.Backends;
import dev.caravan.csi.config.Body;
import dev.caravan.csi.config.ConfigFiles;
import dev.caravan.csi.config.Hcl;
import dev.caravan.csi.config.Value;
import dev.caravan.csi.dhv.DhvMain;
import dev.caravan.csi.observe.http.HttpSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every HCL file under examples/nomad and examples/qnap, whoever added it: it parses, each plugin
 * task's {@code caravan serve} arguments are what serve accepts (flags, driver, the config file next
 * to it, the HTTP listen address), its csi_plugin stanza is well formed and its
 * stage_publish_base_dir is Nomad's mount root for that plugin, and each volume spec names a plugin
 * the examples define and only parameters of the backend that plugin runs; together the volume specs
 * show every parameter of every backend.
 */
class ExamplesTest {
  private static final Path EXAMPLES = Path.of("..", "examples").toAbsolutePath().normalize();
  private static final Set<String> PLUGIN_TYPES = Set.of("monolith", "controller", "node");

  private static List<Path> files() throws IOException {
    List<Path> out = new ArrayList<>();
    for (String dir : List.of("nomad", "qnap")) {
      try (Stream<Path> s = Files.walk(EXAMPLES.resolve(dir))) {
        s.filter(p -> p.toString().endsWith(".hcl")).sorted().forEach(out::add);
      }
    }
    return out;
  }

  private static Body parse(Path file) throws Exception {
    return Hcl.parse(EXAMPLES.relativize(file), Files.readString(file, StandardCharsets.UTF_8));
  }

  private static Optional<String> string(Body b, String name) {
    return b.attribute(name).map(Body.Attribute::value).filter(Value.Str.class::isInstance)
        .map(v -> ((Value.Str) v).text());
  }

  /** Every block at any depth, with the path of block types leading to it. */
  private static void blocks(Body b, List<Body.Block> into) {
    for (Body.Block x : b.blocks()) {
      into.add(x);
      blocks(x.body(), into);
    }
  }

  @Test
  void everyJobspecsPluginStanzaPathsAndPortsAreWhatServeExpects() throws Exception {
    List<Path> files = files();
    assertThat(files).as("the examples exist").isNotEmpty();
    Map<String, String> driverOfPlugin = new HashMap<>();
    List<Path> volumeSpecs = new ArrayList<>();
    int pluginTasks = 0;
    for (Path file : files) {
      Body body = parse(file);
      if (string(body, "plugin_id").isPresent()) {
        volumeSpecs.add(file);
      }
      List<Body.Block> all = new ArrayList<>();
      blocks(body, all);
      for (Body.Block task : all.stream().filter(b -> b.type().equals("task")).toList()) {
        Optional<Body.Block> plugin = task.body().blocks("csi_plugin").stream().findFirst();
        if (plugin.isEmpty()) {
          continue;
        }
        pluginTasks++;
        String where = EXAMPLES.relativize(file) + ":" + plugin.get().line();
        String id = string(plugin.get().body(), "id").orElseThrow(() -> new AssertionError(where + ": no csi_plugin id"));
        String type = string(plugin.get().body(), "type").orElse("");
        assertThat(PLUGIN_TYPES).as(where + ": csi_plugin type").contains(type);
        String driver = checkServeArguments(file, task, where);
        String before = driverOfPlugin.putIfAbsent(id, driver);
        assertThat(before == null || before.equals(driver)).as(where + ": plugin " + id + " runs one driver everywhere")
            .isTrue();
        string(plugin.get().body(), "stage_publish_base_dir").ifPresent(dir ->
            assertThat(dir).as(where + ": stage_publish_base_dir is Nomad's host mount root for this plugin")
                .endsWith("/csi/" + type + "/" + id));
      }
    }
    assertThat(pluginTasks).as("plugin jobs among the examples").isPositive();
    Map<String, Set<String>> explained = new TreeMap<>();
    for (Path spec : volumeSpecs) {
      Body body = parse(spec);
      String pluginId = string(body, "plugin_id").orElseThrow();
      String type = string(body, "type").orElse("csi");
      String where = EXAMPLES.relativize(spec) + ":" + body.attribute("plugin_id").orElseThrow().line();
      if (type.equals("csi")) {
        assertThat(driverOfPlugin).as(where + ": a CSI volume's plugin_id is a plugin the examples run").containsKey(pluginId);
        String driver = driverOfPlugin.get(pluginId);
        for (Body.Block p : body.blocks("parameters")) {
          Set<String> keys = p.body().attributes().stream().map(Body.Attribute::name).collect(Collectors.toSet());
          assertThat(Backends.parameters(driver)).as(where + ": parameters the " + driver + " backend takes")
              .containsAll(keys);
          explained.computeIfAbsent(driver, d -> new TreeSet<>()).addAll(keys);
        }
      } else {
        assertThat(pluginId).as(where + ": a host volume's plugin is one `caravan dhv install` writes")
            .matches("caravan-(" + String.join("|", DhvMain.DRIVERS) + ")(-deferred)?");
      }
      for (Body.Block p : body.blocks("parameters")) {
        string(p.body(), "fsType").ifPresent(fs -> assertThat(fs).as(where + ": fsType").isIn("ext4", "xfs"));
      }
    }
    // Each backend's parameters are all shown, and explained, in some volume spec.
    assertThat(explained).as("the backends whose volume specs the examples have").containsOnlyKeys(Backends.DRIVERS);
    explained.forEach((driver, keys) ->
        assertThat(keys).as("the " + driver + " parameters the volume specs show").isEqualTo(Backends.parameters(driver)));
  }

  /** Checks a plugin task's {@code caravan serve} arguments; returns the driver it runs. */
  private static String checkServeArguments(Path file, Body.Block task, String where) throws Exception {
    Body.Block config = task.body().blocks("config").getFirst();
    Value args = config.body().attribute("args").orElseThrow().value();
    assertThat(args).as(where + ": args is a list").isInstanceOf(Value.Tuple.class);
    List<String> list = new ArrayList<>();
    for (Value v : ((Value.Tuple) args).items()) {
      assertThat(v).as(where + ": each argument is a string").isInstanceOf(Value.Str.class);
      list.add(((Value.Str) v).text());
    }
    assertThat(list).as(where).isNotEmpty();
    assertThat(list.getFirst()).as(where + ": the plugin runs `caravan serve`").isEqualTo("serve");
    ServeCommand serve;
    try {
      serve = ServeCommand.parse(list.subList(1, list.size()).toArray(String[]::new)).orElseThrow();
    } catch (FlagException e) {
      throw new AssertionError(where + ": caravan serve refuses the arguments: " + e.getMessage(), e);
    }
    if (serve.driver != null) {
      assertThat(Backends.DRIVERS).as(where + ": --driver").contains(serve.driver);
    }
    if (serve.httpListen != null && !serve.httpListen.equals("off")) {
      HttpSettings.parseListen(serve.httpListen);
    }
    String driver = serve.driver;
    if (serve.config != null) {
      assertThat(serve.config.getFileName().toString()).as(where + ": --config is HCL or JSON").matches(".*\\.(hcl|json)");
      // The example of that config, when the examples ship one (same name, or the file the node's is made from).
      Path sibling = file.resolveSibling(serve.config.getFileName().toString());
      Path base = file.resolveSibling(serve.config.getFileName().toString().replace("-node", ""));
      for (Path example : List.of(sibling, base)) {
        if (Files.exists(example)) {
          Body read = ConfigFiles.read(example);
          ServeConfig.apply(example, read, ServeCommand.FLAGS, new ServeCommand(), Set.of(), Backends.DRIVERS,
              flag -> false);
          driver = driver != null ? driver : string(read, "driver").orElse(null);
        }
      }
    }
    return driver != null ? driver : "file";
  }

  /** Text checks only: no YAML parser or Prometheus here. The port and path are the ones serve uses. */
  @Test
  void thePrometheusExampleScrapesServesPortAndPathOverMutualTls() throws IOException {
    String yml = Files.readString(EXAMPLES.resolve("prometheus/caravan-scrape.yml"), StandardCharsets.UTF_8);
    assertThat(yml).contains("metrics_path: /metrics", "scheme: https", "cert_file:", "key_file:")
        .containsPattern("- [a-z0-9.-]+:" + HttpSettings.DEFAULT_PORT + "\\n");
    assertThat(yml).contains("http_tls_client_ca");
  }

  @Test
  void theExampleConfigFilesPassServesRules() throws Exception {
    List<Path> configs;
    try (Stream<Path> s = Files.walk(EXAMPLES)) {
      configs = s.filter(p -> p.getFileName().toString().matches("(caravan|qnap)[^/]*\\.(hcl|json)"))
          .filter(p -> !p.getFileName().toString().contains(".nomad."))
          // A Grafana dashboard is JSON named after Caravan, but it is no `caravan serve` config.
          .filter(p -> !p.startsWith(EXAMPLES.resolve("grafana"))).toList();
    }
    assertThat(configs).as("examples/qnap/qnap.hcl at least").isNotEmpty();
    // And the example the distribution and the Debian package ship in /etc/caravan.
    configs = Stream.concat(configs.stream(),
        Stream.of(EXAMPLES.resolveSibling("dist").resolve("src/etc/caravan.hcl.example"))).toList();
    for (Path c : configs) {
      Body body = ConfigFiles.read(c);
      if (body.blocks("job").isEmpty() && body.attribute("plugin_id").isEmpty()) {
        ServeConfig s = ServeConfig.apply(c, body, ServeCommand.FLAGS, new ServeCommand(), Set.of(), Backends.DRIVERS,
            flag -> false);
        String driver = string(body, "driver").orElse("file");
        assertThat(s.backend(body, driver).backendOptions()).as(c.toString()).isNotNull();
      }
    }
  }
}

package dev.caravan.csi.cli;

import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import java.time.Duration;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code caravan serve --config}: real files, the rules, and precedence. */
class ServeConfigTest {
  @TempDir Path dir;

  /** Parses {@code args}, writes {@code text} to {@code name} and applies it as --config. */
  private ServeRun apply(String name, String text, String... args) throws Exception {
    Path file = dir.resolve(name);
    Files.writeString(file, text);
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--config", file.toString()));
    ServeCommand serve = ServeCommand.parse(all.toArray(String[]::new)).orElseThrow();
    return ServeRun.of(serve, serve::applyConfig);
  }

  /** A value of each flag's kind, as HCL source. */
  private static String sample(Flag<ServeCommand> f, int i) {
    String one = switch (f.kind()) {
      case NUMBER -> Integer.toString(100 + i);
      case BOOLEAN -> "false";
      case TEXT, PATH -> "\"/v" + i + "\"";
    };
    return f.repeatable() ? "[" + one + ", " + one + "]" : one;
  }

  @Test
  void everyFlagOfServeIsAKeyOfTheFile() throws Exception {
    Map<String, Flag<ServeCommand>> keys = ServeConfig.keys(ServeCommand.FLAGS);
    // Derived from the table: every flag but --config, so a new flag needs no change here.
    assertThat(keys).hasSize(ServeCommand.FLAGS.all().size() - 1);
    StringBuilder text = new StringBuilder();
    Map<String, String> samples = new LinkedHashMap<>();
    int i = 0;
    for (Map.Entry<String, Flag<ServeCommand>> e : keys.entrySet()) {
      String v = sample(e.getValue(), i++);
      samples.put(e.getKey(), v);
      text.append(e.getKey()).append(" = ").append(v).append('\n');
    }
    ServeRun all = apply("all.hcl", text.toString());
    assertThat(all.exit()).as(all.err()).isZero();
    for (Map.Entry<String, Flag<ServeCommand>> e : keys.entrySet()) {
      Flag<ServeCommand> flag = e.getValue();
      ServeRun one = apply(e.getKey() + ".hcl", e.getKey() + " = " + samples.get(e.getKey()) + "\n");
      assertThat(one.exit()).as(one.err()).isZero();
      // The same value the flag itself gives, and not the default.
      List<String> flagArgs = new ArrayList<>();
      for (String part : samples.get(e.getKey()).replaceAll("[\\[\\]\"]", "").split(", ", -1)) {
        flagArgs.add(flag.name() + "=" + part);
      }
      flagArgs.addAll(List.of("--config", dir.resolve(e.getKey() + ".hcl").toString()));
      ServeCommand byFlag = ServeCommand.parse(flagArgs.toArray(String[]::new)).orElseThrow();
      assertThat(one.serve()).as(e.getKey()).usingRecursiveComparison().ignoringFields("given", "applied")
          .isEqualTo(byFlag);
      ServeCommand none = ServeCommand.parse("--config", dir.resolve(e.getKey() + ".hcl").toString()).orElseThrow();
      assertThat(one.serve()).as(e.getKey() + " differs from the default").usingRecursiveComparison()
          .ignoringFields("given", "applied").isNotEqualTo(none);
    }
  }

  @Test
  void flagsWinOverTheFileAndTheBackendBlockBecomesItsOptions() throws Exception {
    ServeRun r = apply("caravan.hcl", """
        driver      = "qnap"
        node_id     = "iqn.2005-10.org.example:from-file"
        max_volumes = 8
        allowed_root = ["/srv/a", "/srv/b"]
        qnap {
          url         = "https://nas.example:443"
          portals     = ["10.0.10.5", "10.0.20.5:3261"]
          default_pool = 2
          credentials_file = "/etc/caravan/qnap-credentials"
        }
        local {
          pools = ["tank"]
        }
        """, "--node-id", "iqn.2005-10.org.example:from-flag", "--allowed-root", "/flag");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.serve().driver).isEqualTo("qnap");
    assertThat(r.serve().nodeId).isEqualTo("iqn.2005-10.org.example:from-flag");
    assertThat(r.serve().maxVolumes).isEqualTo(8L);
    assertThat(r.serve().allowedRoots).containsExactly(Path.of("/flag"));
    assertThat(r.serve().backendOptions).containsOnly(Map.entry("url", "https://nas.example:443"),
        Map.entry("portals", "10.0.10.5,10.0.20.5:3261"), Map.entry("default-pool", "2"),
        Map.entry("credentials-file", "/etc/caravan/qnap-credentials"));
  }

  @Test
  void theEnvironmentWinsOverTheFileForTheOptionsItSets() throws Exception {
    Path file = dir.resolve("env.hcl");
    Files.writeString(file, "endpoint = \"unix:///from/file.sock\"\nnode_id = \"from-file\"\n");
    ServeCommand serve = ServeCommand.parse("--config", file.toString()).orElseThrow();
    ServeConfig.apply(file, dev.caravan.csi.config.ConfigFiles.read(file), ServeCommand.FLAGS, serve, Set.of(),
        List.of("file"), flag -> flag.equals("--endpoint"));
    assertThat(serve.endpoint).isNull();
    assertThat(serve.nodeId).isEqualTo("from-file");
  }

  @Test
  void jsonAndTheOldPropertiesFormatReadTheSame() throws Exception {
    ServeRun json = apply("caravan.json", """
        {"driver": "local", "max_volumes": 3, "allowed_root": ["/a"], "local": {"pools": ["tank", "pool2"]}}
        """);
    assertThat(json.exit()).as(json.err()).isZero();
    ServeRun props = apply("caravan.properties", "driver=local\nmax-volumes=3\nallowed-roots=/a\nlocal.pools=tank,pool2\n");
    assertThat(props.exit()).as(props.err()).isZero();
    for (ServeRun r : List.of(json, props)) {
      assertThat(r.serve().driver).isEqualTo("local");
      assertThat(r.serve().maxVolumes).isEqualTo(3L);
      assertThat(r.serve().allowedRoots).containsExactly(Path.of("/a"));
      assertThat(r.serve().backendOptions).containsOnly(Map.entry("pools", "tank,pool2"));
    }
  }

  @Test
  void anUnknownKeyOrABadValueStopsNamingTheFileTheLineAndTheRule() throws Exception {
    record Case(String text, int line, String rule) {}
    List<Case> cases = List.of(
        new Case("driver = \"file\"\nnode-id = \"n\"\n", 2, "unknown key 'node-id' (did you mean node_id?)"),
        new Case("\nallowed_roots = [\"/a\"]\n", 2, "unknown key 'allowed_roots' (did you mean allowed_root?)"),
        new Case("max_volumes = \"ten\"\n", 1, "max_volumes: --max-volumes: 'ten' is not a whole number"),
        new Case("node_id = [\"a\", \"b\"]\n", 1, "node_id takes one value, not a list"),
        new Case("data_dir = \"${env.HOME}/x\"\n", 1, "data_dir must be a string, number or boolean written out"),
        new Case("http_token = \"s3cret\"\n", 1, "a secret is never written in the config"),
        new Case("qnap = \"x\"\n", 1, "(qnap is a block: qnap { ... })"),
        new Case("nfs {\n}\n", 1, "unknown block 'nfs'"),
        new Case("driver = \"qnap\"\nqnap {\n  password = \"s3cret\"\n}\n", 3, "qnap.password: a secret is never"),
        new Case("driver = \"qnap\"\nqnap {\n  ca-file = \"/x\"\n}\n", 3, "keys are written with '_': ca_file"),
        new Case("metrics = \"maybe\"\n", 1, "metrics: --metrics: 'maybe' is not true or false"),
        new Case("driver = \"file\"\nqnap {}\nqnap {}\n", 3, "a second qnap block (the first is on line 2)"));
    for (Case c : cases) {
      ServeRun r = apply("bad.hcl", c.text());
      assertThat(r.exit()).as(c.text()).isEqualTo(2);
      assertThat(r.err()).as(c.text()).startsWith("caravan: " + dir.resolve("bad.hcl") + ":" + c.line() + ": ")
          .contains(c.rule()).doesNotContain("\tat ").doesNotContain("Exception");
    }
  }

  @Test
  void theKeyCostsComeFromTheFileAndAValueOutOfRangeNamesItsLineTheFlagAndTheRule() throws Exception {
    ServeRun ok = apply("costs.hcl", "luks_iter_time = 5\nluks_pbkdf_memory = 65536\nzfs_pbkdf2_iters = 200000\n");
    assertThat(ok.exit()).isZero();
    assertThat(ok.serve().luksCost()).isEqualTo(KeySlotCost.iterTime(Duration.ofMillis(5)).withMemoryKiB(65536));
    assertThat(ok.serve().zfsCost()).isEqualTo(new Pbkdf2Iters(200_000));

    Path file = dir.resolve("low.hcl");
    Files.writeString(file, "driver = \"local\"\nhttp_listen = \"off\"\n\nzfs_pbkdf2_iters = 99999\n");
    ServeCommand serve = ServeCommand.parse("--config", file.toString(), "--endpoint=unix://" + dir.resolve("csi.sock"))
        .orElseThrow();
    ServeRun r = ServeRun.of(serve, serve);
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).contains(file + ":4: zfs_pbkdf2_iters: --zfs-pbkdf2-iters '99999' must be from 100000"
        + " (OpenZFS's minimum) to 2147483647");
    assertThat(dir.resolve("csi.sock")).doesNotExist();

    Path small = dir.resolve("small.hcl");
    Files.writeString(small, "driver = \"file\"\nhttp_listen = \"off\"\nluks_iter_time = 5\nluks_pbkdf_memory = 16\n");
    ServeCommand tooSmall = ServeCommand.parse("--config", small.toString(),
        "--endpoint=unix://" + dir.resolve("csi.sock")).orElseThrow();
    ServeRun s = ServeRun.of(tooSmall, tooSmall);
    assertThat(s.exit()).isEqualTo(2);
    assertThat(s.err()).contains(small + ":4: luks_pbkdf_memory: --luks-pbkdf-memory '16' must be a number of KiB"
        + " from 32 to 4194304");
    assertThat(dir.resolve("csi.sock")).doesNotExist();
  }

  @Test
  void aValueServeRefusesLaterStillNamesItsLine() throws Exception {
    Path file = dir.resolve("later.hcl");
    Files.writeString(file, "driver = \"file\"\n\niscsi_gc = \"maybe\"\nhttp_listen = \"off\"\n");
    ServeCommand serve = ServeCommand.parse("--config", file.toString(), "--endpoint=unix://" + dir.resolve("csi.sock"))
        .orElseThrow();
    ServeRun r = ServeRun.of(serve, serve);
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).contains(file + ":3: iscsi_gc: --iscsi-gc 'maybe' must be on or off");
    assertThat(dir.resolve("csi.sock")).doesNotExist();

    Files.writeString(file, """
        driver = "qnap"
        http_listen = "off"
        qnap {
          url = "https://nas:443"
          portals = ["10.0.0.1"]
          transport = "smoke-signals"
        }
        """);
    // The node id given: without it, a host without open-iscsi is refused before the qnap block is read.
    ServeCommand qnap = ServeCommand.parse("--config", file.toString(), "--endpoint=unix://" + dir.resolve("csi.sock"),
        "--data-dir", dir.resolve("data").toString(), "--node-id=iqn.2026-01.dev.caravan:config").orElseThrow();
    ServeRun q = ServeRun.of(qnap, qnap);
    assertThat(q.exit()).as(q.err()).isEqualTo(1);
    assertThat(q.err()).contains(file + ":6: cannot start: ").contains("qnap.transport 'smoke-signals' must be");
  }
}

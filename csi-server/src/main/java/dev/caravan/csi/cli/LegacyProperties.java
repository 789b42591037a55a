package dev.caravan.csi.cli;

import dev.caravan.csi.config.Body;
import dev.caravan.csi.config.ConfigException;
import dev.caravan.csi.config.Value;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

/**
 * The properties format {@code --config} took before HCL ({@code node-id=...},
 * {@code qnap.url=...}), read into the same tree an HCL file gives, so one set of rules checks
 * both: {@code some-key} is the key {@code some_key}, {@code <driver>.key} a key of the driver's
 * block, {@code allowed-roots} the comma-separated {@code allowed_root} list and
 * {@code drain-timeout-seconds} {@code drain_timeout}.
 */
final class LegacyProperties {
  private LegacyProperties() {}

  static Body read(Path file, Collection<String> drivers) throws ConfigException {
    String text;
    Properties p = new Properties();
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
      p.load(new StringReader(text));
    } catch (IOException | IllegalArgumentException e) {
      throw new ConfigException(file, 0, "cannot be read as a properties file: " + e.getMessage());
    }
    List<String> lines = text.lines().toList();
    List<Body.Attribute> attributes = new ArrayList<>();
    Map<String, List<Body.Attribute>> blocks = new LinkedHashMap<>();
    for (String key : new TreeSet<>(p.stringPropertyNames())) {
      int line = line(lines, key);
      String value = p.getProperty(key).strip();
      String driver = drivers.stream().filter(d -> key.startsWith(d + ".")).findFirst().orElse(null);
      if (driver != null) {
        String option = key.substring(driver.length() + 1).replace('-', '_');
        blocks.computeIfAbsent(driver, d -> new ArrayList<>())
            .add(new Body.Attribute(option, new Value.Str(value, false, line), line));
      } else if (key.equals("allowed-roots")) {
        List<Value> roots = new ArrayList<>();
        for (String r : value.split(",", -1)) {
          if (!r.isBlank()) {
            roots.add(new Value.Str(r.strip(), false, line));
          }
        }
        attributes.add(new Body.Attribute("allowed_root", new Value.Tuple(roots, line), line));
      } else if (!value.isEmpty()) {
        String name = key.equals("drain-timeout-seconds") ? "drain_timeout" : key.replace('-', '_');
        attributes.add(new Body.Attribute(name, new Value.Str(value, false, line), line));
      }
    }
    List<Body.Block> out = new ArrayList<>();
    blocks.forEach((driver, attrs) -> out.add(new Body.Block(driver, List.of(), new Body(attrs, List.of()),
        attrs.getFirst().line())));
    return new Body(attributes, out);
  }

  private static int line(List<String> lines, String key) {
    for (int i = 0; i < lines.size(); i++) {
      String l = lines.get(i).stripLeading();
      if (l.startsWith(key) && l.substring(key.length()).matches("\\s*[=:].*|\\s+.*")) {
        return i + 1;
      }
    }
    return 0;
  }
}

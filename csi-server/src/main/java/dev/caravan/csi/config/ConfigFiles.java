package dev.caravan.csi.config;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads a config file into a {@link Body}: JSON when its name ends in {@code .json}, else HCL. In
 * JSON, an object is a block (so {@code "qnap": {"url": ...}} reads as {@code qnap { url = ... }}).
 */
public final class ConfigFiles {
  private static final JsonFactory JSON = JsonFactory.builder()
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .build();

  private ConfigFiles() {}

  /**
   * The file's attributes and blocks.
   *
   * @throws ConfigException when the file cannot be read or breaks the syntax, with the line
   */
  public static Body read(Path file) throws ConfigException {
    String text;
    try {
      text = StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(Files.readAllBytes(file))).toString();
    } catch (CharacterCodingException e) {
      throw new ConfigException(file, 0, "is not UTF-8 text");
    } catch (IOException e) {
      throw new ConfigException(file, 0, "cannot be read: " + e.getMessage());
    }
    return file.getFileName().toString().endsWith(".json") ? json(file, text) : Hcl.parse(file, text);
  }

  static Body json(Path file, String text) throws ConfigException {
    try (JsonParser p = JSON.createParser(text)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new ConfigException(file, line(p), "a JSON config is one object ({\"driver\": \"file\", ...})");
      }
      Body body = body(file, p);
      if (p.nextToken() != null) {
        throw new ConfigException(file, line(p), "nothing may follow the config's closing '}'");
      }
      return body;
    } catch (JsonProcessingException e) {
      int line = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
      throw new ConfigException(file, line, "is not valid JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new ConfigException(file, 0, "cannot be read: " + e.getMessage());
    }
  }

  /** The members of the object {@code p} is at the start of, up to its end. */
  private static Body body(Path file, JsonParser p) throws IOException, ConfigException {
    List<Body.Attribute> attributes = new ArrayList<>();
    List<Body.Block> blocks = new ArrayList<>();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      int line = line(p);
      if (p.nextToken() == JsonToken.START_OBJECT) {
        blocks.add(new Body.Block(name, List.of(), body(file, p), line));
      } else {
        attributes.add(new Body.Attribute(name, value(file, p), line));
      }
    }
    return new Body(attributes, blocks);
  }

  private static Value value(Path file, JsonParser p) throws IOException, ConfigException {
    int line = line(p);
    return switch (p.currentToken()) {
      case VALUE_STRING -> new Value.Str(p.getText(), false, line);
      case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> new Value.Num(p.getDecimalValue(), line);
      case VALUE_TRUE -> new Value.Bool(true, line);
      case VALUE_FALSE -> new Value.Bool(false, line);
      case VALUE_NULL -> new Value.Null(line);
      case START_ARRAY -> {
        List<Value> items = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
          items.add(value(file, p));
        }
        yield new Value.Tuple(items, line);
      }
      case START_OBJECT -> {
        Map<String, Value> entries = new LinkedHashMap<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String key = p.currentName();
          p.nextToken();
          entries.put(key, value(file, p));
        }
        yield new Value.Obj(entries, line);
      }
      default -> throw new ConfigException(file, line, "unexpected " + p.currentToken());
    };
  }

  private static int line(JsonParser p) {
    return p.currentTokenLocation().getLineNr();
  }
}

package dev.caravan.csi.config;

import java.util.List;
import java.util.Optional;

/** The attributes and blocks of a file or of a block, in file order. */
public record Body(List<Attribute> attributes, List<Block> blocks) {
  public Body {
    attributes = List.copyOf(attributes);
    blocks = List.copyOf(blocks);
  }

  /** {@code name = value}. */
  public record Attribute(String name, Value value, int line) {}

  /** {@code type "label" ... { body }}. */
  public record Block(String type, List<String> labels, Body body, int line) {
    public Block {
      labels = List.copyOf(labels);
    }
  }

  public Optional<Attribute> attribute(String name) {
    return attributes.stream().filter(a -> a.name().equals(name)).findFirst();
  }

  public List<Block> blocks(String type) {
    return blocks.stream().filter(b -> b.type().equals(type)).toList();
  }
}

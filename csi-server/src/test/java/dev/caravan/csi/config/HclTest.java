package dev.caravan.csi.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class HclTest {
  private static final Path FILE = Path.of("caravan.hcl");

  private static Body parse(String text) throws ConfigException {
    return Hcl.parse(FILE, text);
  }

  private static Value value(Body b, String name) {
    return b.attribute(name).orElseThrow().value();
  }

  @Test
  void readsLiteralsBlocksAndCommentsWithTheirLines() throws Exception {
    Body b = parse("""
        // a comment
        /* a block
           comment */
        driver = "qnap"   # trailing
        max_volumes = 10
        ratio = -1.5e3
        esc = "a\\"b\\\\c\\t\\u00e9\\U0001F600"
        flag = true
        none = null
        roots = ["/a",
          "/b", # the second
        ]
        obj = { a = 1, "b" = "x" }
        qnap {
          url = "https://nas:443"
        }
        task "a" b { x = 1 }
        """);
    assertThat(value(b, "driver")).isEqualTo(new Value.Str("qnap", false, 4));
    assertThat(b.attribute("max_volumes").orElseThrow().line()).isEqualTo(5);
    assertThat(value(b, "max_volumes")).isEqualTo(new Value.Num(new BigDecimal("10"), 5));
    assertThat(((Value.Num) value(b, "ratio")).value()).isEqualByComparingTo("-1500");
    assertThat(((Value.Str) value(b, "esc")).text()).isEqualTo("a\"b\\c\t\u00e9\uD83D\uDE00");
    assertThat(value(b, "flag")).isEqualTo(new Value.Bool(true, 8));
    assertThat(value(b, "none")).isEqualTo(new Value.Null(9));
    assertThat(((Value.Tuple) value(b, "roots")).items()).extracting(v -> ((Value.Str) v).text())
        .containsExactly("/a", "/b");
    assertThat(((Value.Obj) value(b, "obj")).entries()).containsOnlyKeys("a", "b");
    Body.Block qnap = b.blocks("qnap").getFirst();
    assertThat(qnap.line()).isEqualTo(14);
    assertThat(qnap.body().attribute("url").orElseThrow().line()).isEqualTo(15);
    Body.Block task = b.blocks("task").getFirst();
    assertThat(task.labels()).containsExactly("a", "b");
    assertThat(value(task.body(), "x")).isEqualTo(new Value.Num(BigDecimal.ONE, 17));
  }

  @Test
  void keepsTemplatesAndExpressionsAsTheirSourceText() throws Exception {
    Body b = parse("""
        command = "${var.home}/bin/caravan"
        literal = "$${not} a template"
        type    = string
        sum     = 1 + var.x
        call    = file("/etc/x") # comment
        list    = [for s in var.l : upper(s)]
        text = <<-EOT
            line one
              ${node.unique.name}
            EOT
        after = 1
        """);
    assertThat(value(b, "command")).isEqualTo(new Value.Str("${var.home}/bin/caravan", true, 1));
    assertThat(value(b, "literal")).isEqualTo(new Value.Str("${not} a template", false, 2));
    assertThat(value(b, "type")).isEqualTo(new Value.Expr("string", 3));
    assertThat(value(b, "sum")).isEqualTo(new Value.Expr("1 + var.x", 4));
    assertThat(value(b, "call")).isEqualTo(new Value.Expr("file(\"/etc/x\")", 5));
    assertThat(value(b, "list")).isEqualTo(new Value.Expr("[for s in var.l : upper(s)]", 6));
    assertThat(value(b, "text")).isEqualTo(new Value.Str("line one\n  ${node.unique.name}\n", true, 7));
    assertThat(b.attribute("after").orElseThrow().line()).isEqualTo(11);
  }

  @Test
  void refusesBrokenSyntaxNamingTheLineAndTheRule() {
    record Case(String text, int line, String rule) {}
    List<Case> cases = List.of(
        new Case("a = 1\nqnap {\n  url = \"x\"\n", 2, "the block opened on this line is not closed"),
        new Case("qnap {\n  url =\n}\n", 2, "'url' has no value"),
        new Case("a = 1\nb = 2\na = 3\n", 3, "'a' is set twice (first on line 1)"),
        new Case("a = \"open\nb = 1\n", 1, "a string is not closed"),
        new Case("a = \"\\q\"\n", 1, "unknown escape '\\q'"),
        new Case("a = \"x\" b = 2\n", 1, "expected a new line after 'a'"),
        new Case("a = 1\n}\n", 2, "unexpected '}'"),
        new Case("a = [1,\n 2\n", 1, "the list 'a' opened on this line is not closed"),
        new Case("a = [1 2]\n", 1, "expected ',' or ']' in the list 'a'"),
        new Case("o = { k = 1, k = 2 }\n", 1, "the key 'k' appears twice"),
        new Case("t = <<EOT\nno end\n", 1, "has no closing 'EOT' line"),
        new Case("\n\n= 1\n", 3, "expected an attribute name or a block type"),
        new Case("/* open\n", 1, "a '/*' comment is not closed"));
    for (Case c : cases) {
      assertThatThrownBy(() -> parse(c.text())).as(c.text())
          .isInstanceOfSatisfying(ConfigException.class, e -> {
            assertThat(e.line()).as(c.text()).isEqualTo(c.line());
            assertThat(e.rule()).as(c.text()).contains(c.rule());
            assertThat(e.getMessage()).startsWith("caravan.hcl:" + c.line() + ": ");
          });
    }
  }

  @Test
  void jsonReadsIntoTheSameTreeWithLines() throws Exception {
    Body b = ConfigFiles.json(Path.of("c.json"), """
        {
          "driver": "qnap",
          "allowed_root": ["/a", "/b"],
          "qnap": {
            "url": "https://nas:443"
          }
        }
        """);
    assertThat(value(b, "driver")).isEqualTo(new Value.Str("qnap", false, 2));
    assertThat(b.blocks("qnap").getFirst().body().attribute("url").orElseThrow().line()).isEqualTo(5);
    assertThatThrownBy(() -> ConfigFiles.json(Path.of("c.json"), "{\n \"a\": 1,\n \"a\": 2\n}"))
        .isInstanceOfSatisfying(ConfigException.class, e -> {
          assertThat(e.line()).isEqualTo(3);
          assertThat(e.rule()).contains("Duplicate field 'a'");
        });
    assertThatThrownBy(() -> ConfigFiles.json(Path.of("c.json"), "{\n \"a\": 1,\n}"))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.line()).isEqualTo(3));
  }
}

package dev.caravan.csi.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class JsonTest {
  @Test
  void escapesEverythingThatMustBeEscaped() {
    String nasty = "q\" b\\ n\n r\r t\t \u0000 \u001f \u007f \u2028 é 😀 </script>";
    String out = Json.write(nasty);
    assertThat(out).isEqualTo("\"q\\\" b\\\\ n\\n r\\r t\\t \\u0000 \\u001f \\u007f \\u2028 é 😀 </script>\"");
    assertThat(Json.parse(out)).isEqualTo(nasty);
    assertThat(Json.write("\ud800x")).isEqualTo("\"\\ud800x\"");
  }

  @Test
  void writesAndReadsStructures() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("a", 1);
    m.put("b", List.of(true, false));
    m.put("c", Optional.empty());
    m.put("d", Optional.of("x"));
    m.put("e", Double.NaN);
    m.put("f", 1.5);
    m.put("g", Map.of());
    String s = Json.write(m);
    assertThat(s).isEqualTo("{\"a\":1,\"b\":[true,false],\"c\":null,\"d\":\"x\",\"e\":null,\"f\":1.5,\"g\":{}}");
    Map<String, Object> back = new LinkedHashMap<>();
    back.put("a", 1L);
    back.put("b", List.of(true, false));
    back.put("c", null);
    back.put("d", "x");
    back.put("e", null);
    back.put("f", new BigDecimal("1.5"));
    back.put("g", Map.of());
    assertThat(Json.parse(s)).isEqualTo(back);
    assertThat(Json.parse(Json.pretty(m))).isEqualTo(back);
    assertThat(Json.parse(" [ -0 , 1e3 , 12345678901234567890 , \"\\u00e9\\/\" ] "))
        .isEqualTo(Arrays.asList(0L, new BigDecimal("1e3"), new BigDecimal("12345678901234567890"), "é/"));
  }

  @Test
  void rejectsMalformedInput() {
    for (String bad : new String[] {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\u0001\"", "\"\\x\"", "tru", "1 2",
        "{\"a\":1,}", "\"abc", "-", "[\"\\u12\"]"}) {
      assertThatThrownBy(() -> Json.parse(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
    }
    assertThatThrownBy(() -> Json.parse("[".repeat(100) + "]".repeat(100))).hasMessageContaining("deeply");
  }
}

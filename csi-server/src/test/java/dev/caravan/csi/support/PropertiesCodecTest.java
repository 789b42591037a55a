package dev.caravan.csi.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class PropertiesCodecTest {
  @Test
  void writesTheCommentTheDateAndEachKeyInKeyOrderWithCharactersBeyondLatin1AsThemselves() {
    Properties p = new Properties();
    p.setProperty("name", "caf\u00e9 = \u4e2d: #1");
    p.setProperty("b", "2");
    p.setProperty("a", "1");

    String text = new String(PropertiesCodec.encode(p, "a record"), StandardCharsets.UTF_8);

    assertThat(text.lines().toList()).hasSize(5);
    assertThat(text.lines().toList().get(0)).isEqualTo("#a record");
    assertThat(text.lines().toList().get(1)).startsWith("#");
    assertThat(text.lines().skip(2).toList()).containsExactly("a=1", "b=2", "name=caf\u00e9 \\= \u4e2d\\: \\#1");
    assertThat(PropertiesCodec.decode(text.getBytes(StandardCharsets.UTF_8))).isEqualTo(p);
  }

  @Test
  void aNullCommentWritesOnlyTheDateLine() {
    Properties p = new Properties();
    p.setProperty("pid", "7");

    String text = new String(PropertiesCodec.encode(p, null), StandardCharsets.UTF_8);

    assertThat(text.lines().toList()).hasSize(2);
    assertThat(text.lines().toList().get(0)).startsWith("#");
    assertThat(text.lines().toList().get(1)).isEqualTo("pid=7");
  }

  @Test
  void readsUtf8AndSkipsComments() {
    byte[] bytes = "#x\n#Fri Dec 04 21:40:39 UTC 2026\nk=\u00e9\u4e2d\nt=a\\:b\n".getBytes(StandardCharsets.UTF_8);

    Properties p = PropertiesCodec.decode(bytes);

    assertThat(p.stringPropertyNames()).containsExactlyInAnyOrder("k", "t");
    assertThat(p.getProperty("k")).isEqualTo("\u00e9\u4e2d");
    assertThat(p.getProperty("t")).isEqualTo("a:b");
  }

  @Test
  void theEntriesUnderAPrefixAreKeyedByTheRestOfTheKey() {
    Properties p = new Properties();
    p.setProperty("context.a", "1");
    p.setProperty("context.b.c", "2");
    p.setProperty("contextual", "no");
    p.setProperty("other.a", "no");

    assertThat(PropertiesCodec.withPrefix(p, "context.")).isEqualTo(Map.of("a", "1", "b.c", "2"));
    assertThat(PropertiesCodec.withPrefix(p, "parameter.")).isEmpty();
  }
}

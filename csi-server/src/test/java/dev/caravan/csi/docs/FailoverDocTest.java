package dev.caravan.csi.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** docs/failover.md against the tests: every mode has a row, and every test a row names exists and is a test. */
class FailoverDocTest {
  private static final Pattern ROW = Pattern.compile("^\\| (\\d) \\|");
  private static final Pattern TEST = Pattern.compile("`(\\w+)#(\\w+)`");

  @Test
  void everyModeHasARowAndEveryNamedTestExists() throws IOException, ClassNotFoundException {
    Path doc = Files.exists(Path.of("docs", "failover.md")) ? Path.of("docs", "failover.md")
        : Path.of("..", "docs", "failover.md");
    Set<Integer> modes = new TreeSet<>();
    List<String> named = new ArrayList<>();
    for (String line : Files.readAllLines(doc)) {
      Matcher row = ROW.matcher(line);
      if (!row.find()) {
        continue;
      }
      modes.add(Integer.parseInt(row.group(1)));
      String provedBy = line.substring(line.lastIndexOf('|', line.length() - 2) + 1); // the last cell
      Matcher test = TEST.matcher(provedBy);
      while (test.find()) {
        Class<?> c = Class.forName("dev.caravan.csi.scenario." + test.group(1));
        assertThat(Arrays.stream(c.getDeclaredMethods()).filter(m -> m.getName().equals(test.group(2)))
            .anyMatch(FailoverDocTest::isTest)).as("%s#%s is a test", test.group(1), test.group(2)).isTrue();
        named.add(test.group(0));
      }
    }
    assertThat(modes).containsExactly(1, 2, 3, 4, 5, 6, 7);
    assertThat(named).as("rows that name the test proving them").isNotEmpty();
  }

  private static boolean isTest(Method m) {
    return m.isAnnotationPresent(Test.class)
        || m.isAnnotationPresent(org.junit.jupiter.params.ParameterizedTest.class);
  }
}

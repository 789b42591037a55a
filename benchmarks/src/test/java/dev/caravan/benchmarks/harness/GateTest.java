package dev.caravan.benchmarks.harness;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.support.Json;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The gate's start and memory ratios, and its verdict on them against a baseline. */
class GateTest {
  @TempDir Path tmp;

  private static final Footprint QUIET = new Footprint("", 20, 22, 1_500, 100 * 1024, 130 * 1024, 4_000);

  @Test
  void startIsOverTheCliStartAndMemoryIsOverItselfIdle() {
    List<Gate.Ratio> ratios = Gate.ratios(List.of(), List.of(QUIET), new Starts(1_500, 100));

    assertThat(ratios).extracting(Gate.Ratio::key, Gate.Ratio::value).containsExactly(
        org.assertj.core.groups.Tuple.tuple("start → Probe ready / caravan version", 15.0),
        org.assertj.core.groups.Tuple.tuple("VmRSS after the calls / VmRSS idle (table 20)", 1.3));
  }

  @Test
  void memoryThatTheCallsKeepFailsTheGateAndASlowerMachineDoesNot() throws IOException {
    Path baseline = baseline(Gate.ratios(List.of(), List.of(QUIET), new Starts(1_500, 100)));

    // Everything twice as slow and a larger idle process (another machine): the same ratios.
    Footprint slowMachine = new Footprint("", 20, 22, 3_000, 150 * 1024, 195 * 1024, 4_000);
    assertThat(verdicts(baseline, Gate.ratios(List.of(), List.of(slowMachine), new Starts(3_000, 200))))
        .endsWith("this run: every ratio within its limit\n");

    // The same calls now leave twice the idle memory behind.
    Footprint leaking = new Footprint("", 20, 22, 1_500, 100 * 1024, 200 * 1024, 4_000);
    assertThat(verdicts(baseline, Gate.ratios(List.of(), List.of(leaking), new Starts(1_500, 100))))
        .contains("| VmRSS after the calls / VmRSS idle (table 20) | 1.300 | 2.000 | +54 % | **FAIL: slower** |")
        .contains("this run: over the limit: ");
  }

  @Test
  void aStartThatTookTwiceAsLongOnTheSameMachineFailsTheGate() throws IOException {
    Path baseline = baseline(Gate.ratios(List.of(), List.of(QUIET), new Starts(1_500, 100)));

    assertThat(verdicts(baseline, Gate.ratios(List.of(), List.of(QUIET), new Starts(3_000, 100))))
        .contains("| start → Probe ready / caravan version | 15.000 | 30.000 | +100 % | **FAIL: slower** |")
        .contains("this run: over the limit: ");
  }

  @Test
  void aBaselineFromSeveralRunsHoldsEachRatiosMedianAndLeavesOutOneARunLacks() {
    List<Gate.Ratio> first = List.of(ratio("a", 3), ratio("b", 10), ratio("only here", 1));
    List<Gate.Ratio> second = List.of(ratio("b", 30), ratio("a", 1));
    List<Gate.Ratio> third = List.of(ratio("a", 2), ratio("b", 20));

    assertThat(Gate.median(List.of(first, second, third))).extracting(Gate.Ratio::key, Gate.Ratio::value)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("a", 2.0), org.assertj.core.groups.Tuple.tuple("b", 20.0));
    assertThat(Gate.median(List.of(first))).isEqualTo(first);
  }

  @Test
  void theVerdictNamesEveryRatioOverItsLimitAndOneNotMeasured() throws IOException {
    Path baseline = baseline(List.of(ratio("publish", 10), ratio("unpublish", 10), ratio("stats", 1)));

    ByteArrayOutputStream table = new ByteArrayOutputStream();
    Set<String> failed = Gate.compare(baseline, List.of(ratio("publish", 16), ratio("unpublish", 14.9)), 0.5,
        new PrintStream(table, true, StandardCharsets.UTF_8));

    assertThat(failed).containsExactly("publish", "stats");
    assertThat(table.toString(StandardCharsets.UTF_8)).contains("| stats | 1.000 | – | – | **FAIL: not measured** |")
        .endsWith("this run: over the limit: publish, stats\n");
  }

  private static Gate.Ratio ratio(String key, double value) {
    return new Gate.Ratio(key, "cost", "reference", value);
  }

  /** The gate's table for {@code now} against {@code baseline}; its last line is the verdict. */
  private static String verdicts(Path baseline, List<Gate.Ratio> now) throws IOException {
    ByteArrayOutputStream table = new ByteArrayOutputStream();
    Set<String> failed = Gate.compare(baseline, now, 0.5, new PrintStream(table, true, StandardCharsets.UTF_8));
    String text = table.toString(StandardCharsets.UTF_8);
    assertThat(text.contains("this run: every ratio within its limit")).as("the printed verdict is the returned one")
        .isEqualTo(failed.isEmpty());
    failed.forEach(key -> assertThat(text).as("a failed ratio's row").contains("| " + key + " |"));
    return text;
  }

  private Path baseline(List<Gate.Ratio> ratios) throws IOException {
    Path file = tmp.resolve("baseline.json");
    Files.writeString(file, Json.pretty(Gate.json("m", "0", "0", 1, List.of(), List.of(QUIET), new Starts(1_500, 100), ratios)));
    return file;
  }
}

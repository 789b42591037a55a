package dev.caravan.benchmarks.harness;

import java.util.Arrays;
import java.util.Locale;

/**
 * Latencies of one operation, in nanoseconds, one per call. Percentiles are exact (nearest rank over
 * the sorted samples), not bucketed as HdrHistogram would: a few thousand longs sort in microseconds.
 */
final class Samples {
  private final String name;
  private long[] values;
  private int size;

  Samples(String name, int expected) {
    this.name = name;
    this.values = new long[Math.max(16, expected)];
  }

  String name() {
    return name;
  }

  void add(long nanos) {
    if (size == values.length) {
      values = Arrays.copyOf(values, size * 2);
    }
    values[size++] = nanos;
  }

  int count() {
    return size;
  }

  /** Nearest-rank percentile in nanoseconds, {@code p} in [0, 100]. */
  long percentile(double p) {
    if (size == 0) {
      throw new IllegalStateException(name + ": no samples");
    }
    long[] sorted = Arrays.copyOf(values, size);
    Arrays.sort(sorted);
    int rank = (int) Math.ceil(p / 100.0 * size);
    return sorted[Math.min(size, Math.max(1, rank)) - 1];
  }

  double mean() {
    double sum = 0;
    for (int i = 0; i < size; i++) {
      sum += values[i];
    }
    return sum / size;
  }

  static String header() {
    return "| operation | n | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | mean µs |\n"
        + "|---|---:|---:|---:|---:|---:|---:|---:|";
  }

  String row() {
    return String.format(Locale.ROOT, "| %s | %d | %s | %s | %s | %s | %s | %s |", name, size,
        micros((double) percentile(50)), micros((double) percentile(90)), micros((double) percentile(99)),
        micros((double) percentile(99.9)), micros((double) percentile(100)), micros(mean()));
  }

  private static String micros(double nanos) {
    return String.format(Locale.ROOT, "%.0f", nanos / 1000.0);
  }
}

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Checks the JVM's array-copy code on the CPU it runs on: for a given number of seconds, copies
 * arrays of every primitive width and of references with {@code Arrays.copyOfRange} and {@code
 * System.arraycopy} (overlapping ones too), at random offsets and lengths, and compares each result
 * with an element-by-element copy. The JIT turns these calls into its arraycopy stubs, generated for
 * the CPU's widest vector instructions (AVX2 when the CPU offers it): a CPU (or an emulator) that
 * executes one of them wrongly shows up here as a wrong element or as a crash, without any other code
 * involved. Run by scripts/guest-jit-check; standalone: java ArrayCopyCheck.java SECONDS.
 * Prints one summary line; exits 1 when any copy was wrong.
 */
public final class ArrayCopyCheck {
  private static long wrong;
  private static long copies;
  private static String firstWrong;

  public static void main(String[] args) {
    long seconds = args.length > 0 ? Long.parseLong(args[0]) : 60;
    long deadline = System.nanoTime() + seconds * 1_000_000_000L;
    SplittableRandom random = new SplittableRandom(seconds * 7919);
    while (System.nanoTime() < deadline) {
      for (int i = 0; i < 200; i++) {
        round(random);
      }
    }
    String options = ManagementFactory.getRuntimeMXBean().getInputArguments().toString();
    System.out.printf("array-copy-check: %d copies in %d s, %d wrong (JVM options %s)%s%n", copies, seconds,
        wrong, options, firstWrong == null ? "" : "; first: " + firstWrong);
    System.exit(wrong == 0 ? 0 : 1);
  }

  private static void round(SplittableRandom random) {
    int n = random.nextInt(1, 4096);
    int from = random.nextInt(n);
    int to = from + random.nextInt(n - from + 64); // beyond the end: copyOfRange pads
    byte[] b = new byte[n];
    random.nextBytes(b);
    check("byte", Arrays.copyOfRange(b, from, to), expected(b, from, to));
    char[] c = new char[n];
    long[] l = new long[n];
    int[] in = new int[n];
    Object[] o = new Object[n];
    for (int i = 0; i < n; i++) {
      c[i] = (char) b[i];
      in[i] = b[i] * 0x01010101;
      l[i] = random.nextLong();
      o[i] = (i & 7) == 0 ? null : Integer.valueOf(i);
    }
    check("char", Arrays.copyOfRange(c, from, to), expectedChars(c, from, to));
    check("int", Arrays.copyOfRange(in, from, to), expectedInts(in, from, to));
    check("long", Arrays.copyOfRange(l, from, to), expectedLongs(l, from, to));
    Object[] oc = Arrays.copyOfRange(o, from, to);
    copies++;
    for (int i = 0; i < oc.length; i++) {
      Object want = from + i < n ? o[from + i] : null;
      if (oc[i] != want) {
        fail("Object", from, to, i);
        break;
      }
    }
    // Overlapping, both directions: memmove semantics.
    int len = random.nextInt(n - from + 1);
    int dst = random.nextInt(n - len + 1);
    byte[] want = b.clone();
    byte[] src = b.clone();
    for (int i = 0; i < len; i++) {
      want[dst + i] = src[from + i];
    }
    System.arraycopy(b, from, b, dst, len);
    check("overlapping byte", b, want);
  }

  private static byte[] expected(byte[] a, int from, int to) {
    byte[] r = new byte[to - from];
    for (int i = 0; i < r.length && from + i < a.length; i++) {
      r[i] = a[from + i];
    }
    return r;
  }

  private static char[] expectedChars(char[] a, int from, int to) {
    char[] r = new char[to - from];
    for (int i = 0; i < r.length && from + i < a.length; i++) {
      r[i] = a[from + i];
    }
    return r;
  }

  private static int[] expectedInts(int[] a, int from, int to) {
    int[] r = new int[to - from];
    for (int i = 0; i < r.length && from + i < a.length; i++) {
      r[i] = a[from + i];
    }
    return r;
  }

  private static long[] expectedLongs(long[] a, int from, int to) {
    long[] r = new long[to - from];
    for (int i = 0; i < r.length && from + i < a.length; i++) {
      r[i] = a[from + i];
    }
    return r;
  }

  private static void check(String type, Object got, Object want) {
    copies++;
    int at = switch (got) {
      case byte[] g -> Arrays.mismatch(g, (byte[]) want);
      case char[] g -> Arrays.mismatch(g, (char[]) want);
      case int[] g -> Arrays.mismatch(g, (int[]) want);
      case long[] g -> Arrays.mismatch(g, (long[]) want);
      default -> throw new IllegalArgumentException(type);
    };
    if (at >= 0) {
      fail(type, -1, -1, at);
    }
  }

  private static void fail(String type, int from, int to, int at) {
    wrong++;
    if (firstWrong == null) {
      firstWrong = type + " copy differs at element " + at + (from < 0 ? "" : " (range " + from + ".." + to + ")");
    }
  }
}

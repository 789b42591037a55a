package dev.caravan.storage.internal.sys;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.NativeAccessDeniedException;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Whether the JVM lets host-storage and the bindings make native calls, asked before either
 * touches native code. Denied, the first class to do so would fail to initialize: an
 * ExceptionInInitializerError on the first call and a NoClassDefFoundError on every call after it,
 * neither naming the flag that is missing. {@link #require()} throws one that does.
 */
public final class NativeAccess {
  private static final String BINDINGS = "dev.caravan.bindings";

  private NativeAccess() {}

  /** Throws {@link NativeAccessDeniedException} when either module's native calls are denied. */
  public static void require() {
    Denial.MESSAGE.ifPresent(
        message -> {
          throw new NativeAccessDeniedException(message);
        });
  }

  /** Computed once, on first use: the answer cannot change while the JVM runs. */
  private static final class Denial {
    static final Optional<String> MESSAGE =
        message(NativeAccess.class.getModule(), restrictedCallAllowed(), NativeLibraries.nativeAccessAllowed());
  }

  /**
   * What to tell the user, or empty when both modules may make native calls.
   *
   * @param storage host-storage's module, named on the module path and unnamed on the class path
   */
  static Optional<String> message(Module storage, boolean storageAllowed, boolean bindingsAllowed) {
    if (storageAllowed && bindingsAllowed) {
      return Optional.empty();
    }
    String modulePathFlag = "--enable-native-access=" + BINDINGS + "," + storage.getName();
    if (!storage.isNamed()) {
      return Optional.of(
          "the JVM denies native access to host-storage (--illegal-native-access=deny): start java with"
              + " --enable-native-access=ALL-UNNAMED (host-storage is on the class path; on the module"
              + " path it is --enable-native-access=dev.caravan.bindings,dev.caravan.storage)");
    }
    List<String> denied = new ArrayList<>();
    if (!bindingsAllowed) {
      denied.add(BINDINGS);
    }
    if (!storageAllowed) {
      denied.add(storage.getName());
    }
    return Optional.of(
        "the JVM denies native access to module " + String.join(" and ", denied)
            + " (--illegal-native-access=deny): start java with " + modulePathFlag
            + " (host-storage is on the module path; on the class path it is"
            + " --enable-native-access=ALL-UNNAMED)");
  }

  // A restricted method without side effects: access is checked against this class's module. The
  // bindings ask the same for theirs (NativeLibraries.nativeAccessAllowed): the JVM answers each
  // module about its own calls, so neither can ask for the other.
  private static boolean restrictedCallAllowed() {
    try {
      ValueLayout.ADDRESS.withTargetLayout(ValueLayout.JAVA_BYTE);
      return true;
    } catch (IllegalCallerException e) {
      return false;
    }
  }
}

package dev.caravan.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Reports which of the native libraries behind the generated bindings can be used on this host.
 *
 * <p>Each C library has its own jextract header class whose static initializer opens the library by
 * SONAME. When the library is missing, initializing that class fails (an {@link
 * ExceptionInInitializerError} wrapping the {@link IllegalArgumentException} thrown by {@link
 * SymbolLookup#libraryLookup(String, Arena)}), and every later use fails with {@link
 * NoClassDefFoundError}. This class triggers that initialization once, remembers the outcome with
 * its original cause, and lets callers disable just the affected feature instead of crashing.
 */
public final class NativeLibraries {

  /** The shared libraries Caravan binds, one generated header class each. */
  public enum Library {
    /** util-linux libblkid: filesystem and partition-table probing. */
    BLKID("dev.caravan.bindings.blkid.Blkid", List.of("libblkid.so.1"), "libblkid1"),
    /** OpenZFS libzfs_core and libnvpair, bound together in one class. */
    ZFS_CORE(
        "dev.caravan.bindings.zfs.ZfsCore",
        List.of("libzfs_core.so.3", "libnvpair.so.3"),
        "libzfs6linux, libnvpair3linux"),
    /** open-iscsi libopeniscsiusr: iSCSI session inspection via sysfs. */
    OPEN_ISCSI_USR(
        "dev.caravan.bindings.iscsi.OpenIscsiUsr",
        List.of("libopeniscsiusr.so.0"),
        "libopeniscsiusr"),
    /** libcryptsetup: LUKS2 headers and dm-crypt mappings. */
    CRYPTSETUP(
        "dev.caravan.bindings.crypt.Cryptsetup", List.of("libcryptsetup.so.12"), "libcryptsetup12");

    private final String bindingClass;

    @SuppressWarnings("ImmutableEnumChecker") // List.copyOf: unmodifiable
    private final List<String> sonames;

    private final String debianPackages;

    Library(String bindingClass, List<String> sonames, String debianPackages) {
      this.bindingClass = bindingClass;
      this.sonames = List.copyOf(sonames);
      this.debianPackages = debianPackages;
    }

    /** Fully qualified name of the generated header class. */
    public String bindingClass() {
      return bindingClass;
    }

    /** The shared objects the header class opens, by SONAME. */
    public List<String> sonames() {
      return sonames;
    }

    /** Debian packages that ship {@link #sonames()}. */
    public String debianPackages() {
      return debianPackages;
    }
  }

  /**
   * Outcome of loading one library's bindings.
   *
   * @param library the library
   * @param available whether its header class initialized, i.e. every SONAME was opened
   * @param problem why it is unavailable, including the Debian package to install; empty when
   *     available
   */
  public record Status(Library library, boolean available, Optional<String> problem) {
    public Status {
      Objects.requireNonNull(library, "library");
      Objects.requireNonNull(problem, "problem");
    }
  }

  private static final Map<Library, Status> STATUS = new EnumMap<>(Library.class);

  private NativeLibraries() {}

  /**
   * Whether {@code library}'s bindings can be used. Initializes the generated header class on the
   * first call; never throws because a library is missing.
   */
  public static boolean isAvailable(Library library) {
    return status(library).available();
  }

  /** The outcome of loading {@code library}'s bindings, computed once and cached. */
  public static synchronized Status status(Library library) {
    Objects.requireNonNull(library, "library");
    Status status = STATUS.get(library);
    if (status == null) {
      status =
          initialize(library.bindingClass())
              .map(
                  problem ->
                      new Status(
                          library,
                          false,
                          Optional.of(
                              String.join(", ", library.sonames())
                                  + " unavailable (Debian: "
                                  + library.debianPackages()
                                  + "): "
                                  + problem)))
              .orElseGet(() -> new Status(library, true, Optional.empty()));
      STATUS.put(library, status);
    }
    return status;
  }

  /**
   * Whether this module may call restricted FFM methods. False when the JVM runs with {@code
   * --illegal-native-access=deny} and does not name this module (or, on the class path, {@code
   * ALL-UNNAMED}) in {@code --enable-native-access}: then every generated class fails to initialize.
   * Asked before any of them is touched, so that the caller can say which flag is missing.
   */
  public static boolean nativeAccessAllowed() {
    return NativeAccessCheck.ALLOWED;
  }

  /**
   * Whether the dynamic linker can open {@code libraryName} (a SONAME such as {@code
   * "libblkid.so.1"}, or a path). The library is closed again before returning.
   */
  public static boolean canOpen(String libraryName) {
    Objects.requireNonNull(libraryName, "libraryName");
    try (Arena arena = Arena.ofConfined()) {
      SymbolLookup.libraryLookup(libraryName, arena);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /**
   * Initializes {@code className}, returning a description of the failure, or empty on success.
   * Package-private so tests can point it at a deliberately broken class.
   */
  static Optional<String> initialize(String className) {
    try {
      Class.forName(className, true, NativeLibraries.class.getClassLoader());
      return Optional.empty();
    } catch (ExceptionInInitializerError e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      return Optional.of(describe(cause));
    } catch (ClassNotFoundException | LinkageError | IllegalCallerException e) {
      // LinkageError covers UnsatisfiedLinkError and the NoClassDefFoundError seen when the class
      // already failed to initialize elsewhere; IllegalCallerException means native access is
      // denied (--illegal-native-access=deny without --enable-native-access).
      return Optional.of(describe(e));
    }
  }

  /** Computed once, on first use: the answer cannot change while the JVM runs. */
  private static final class NativeAccessCheck {
    static final boolean ALLOWED = restrictedCallAllowed();

    // A restricted method without side effects: access is checked against this class's module.
    private static boolean restrictedCallAllowed() {
      try {
        ValueLayout.ADDRESS.withTargetLayout(ValueLayout.JAVA_BYTE);
        return true;
      } catch (IllegalCallerException e) {
        return false;
      }
    }
  }

  private static String describe(Throwable t) {
    String message = t.getMessage();
    return message == null ? t.getClass().getName() : t.getClass().getSimpleName() + ": " + message;
  }
}

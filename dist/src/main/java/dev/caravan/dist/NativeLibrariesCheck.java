package dev.caravan.dist;

import dev.caravan.bindings.NativeLibraries;

/**
 * Opens every native library the bindings bind and prints one line each; exits 1 when one cannot be
 * opened. dist/check runs it inside the OCI image's root filesystem (chroot) on the image's own runtime,
 * to show the image carries the libraries, not only their names.
 */
public final class NativeLibrariesCheck {
  private NativeLibrariesCheck() {}

  public static void main(String[] args) {
    int missing = 0;
    for (NativeLibraries.Library library : NativeLibraries.Library.values()) {
      NativeLibraries.Status status = NativeLibraries.status(library);
      System.out.println(library + " " + library.sonames() + ": "
          + (status.available() ? "available" : "NOT available: " + status.problem().orElse("?")));
      missing += status.available() ? 0 : 1;
    }
    System.exit(missing == 0 ? 0 : 1);
  }
}

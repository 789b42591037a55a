package dev.caravan.bindings;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.bindings.NativeLibraries.Library;
import dev.caravan.bindings.NativeLibraries.Status;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import org.junit.jupiter.api.Test;

class NativeLibrariesTest {

  /** Mimics a generated header class whose library is not installed. */
  static final class MissingLibraryBinding {
    static final SymbolLookup SYMBOL_LOOKUP =
        SymbolLookup.libraryLookup("libcaravan-does-not-exist.so.0", Arena.ofAuto());

    private MissingLibraryBinding() {}
  }

  @Test
  void opensAnInstalledLibraryBySoname() {
    assertThat(NativeLibraries.canOpen("libc.so.6")).isTrue();
    assertThat(NativeLibraries.canOpen("libblkid.so.1")).isTrue();
  }

  @Test
  void reportsAMissingLibraryAsUnopenable() {
    assertThat(NativeLibraries.canOpen("libcaravan-does-not-exist.so.0")).isFalse();
  }

  @Test
  void blkidBindingsInitialize() {
    Status status = NativeLibraries.status(Library.BLKID);

    assertThat(status.available()).as("%s", status.problem()).isTrue();
    assertThat(status.problem()).isEmpty();
    assertThat(NativeLibraries.isAvailable(Library.BLKID)).isTrue();
  }

  @Test
  void availabilityMatchesWhetherTheSonamesOpen() {
    for (Library library : Library.values()) {
      boolean allOpen = library.sonames().stream().allMatch(NativeLibraries::canOpen);
      assertThat(NativeLibraries.isAvailable(library)).as("%s", library).isEqualTo(allOpen);
    }
  }

  @Test
  void aBindingWhoseLibraryIsMissingIsReportedNotThrown() {
    String name = MissingLibraryBinding.class.getName();

    assertThat(NativeLibraries.initialize(name))
        .hasValueSatisfying(
            problem ->
                assertThat(problem)
                    .startsWith("IllegalArgumentException")
                    .contains("libcaravan-does-not-exist.so.0"));
    // The JVM now answers NoClassDefFoundError for the class; that is reported too.
    assertThat(NativeLibraries.initialize(name))
        .hasValueSatisfying(problem -> assertThat(problem).startsWith("NoClassDefFoundError"));
  }

  @Test
  void anUnknownBindingClassIsReported() {
    assertThat(NativeLibraries.initialize("dev.caravan.bindings.nope.Nope"))
        .hasValueSatisfying(problem -> assertThat(problem).contains("ClassNotFoundException"));
  }
}

package dev.caravan.storage.internal.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.NativeLibraryUnavailableException;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ZfsLibraryTest {
  private static final NativeLibraries.Status PRESENT =
      new NativeLibraries.Status(NativeLibraries.Library.ZFS_CORE, true, Optional.empty());

  @Test
  void aMissingLibraryIsReportedAndInitIsNeverCalled() {
    NativeLibraries.Status missing =
        new NativeLibraries.Status(
            NativeLibraries.Library.ZFS_CORE,
            false,
            Optional.of(
                "libzfs_core.so.3, libnvpair.so.3 unavailable (Debian: libzfs6linux,"
                    + " libnvpair3linux): IllegalArgumentException: Cannot open library"));
    AtomicInteger inits = new AtomicInteger();
    ZfsLibrary library = new ZfsLibrary(() -> missing, () -> inits.incrementAndGet() * 0);

    for (int attempt = 0; attempt < 3; attempt++) {
      assertThatThrownBy(library::require)
          .isInstanceOf(NativeLibraryUnavailableException.class)
          .hasMessageStartingWith("ZFS is not available on this host: ")
          .hasMessageContaining("libzfs_core.so.3")
          .hasMessageContaining("libzfs6linux");
    }
    assertThat(inits).hasValue(0);
    assertThat(library.isInitialized()).isFalse();
  }

  @Test
  void aFailedInitIsReportedWithItsErrnoAndRetriedNextTime() {
    AtomicInteger inits = new AtomicInteger();
    ZfsLibrary library =
        new ZfsLibrary(() -> PRESENT, () -> inits.incrementAndGet() < 3 ? ZfsErrors.ENOENT : 0);

    assertThatThrownBy(library::require)
        .isInstanceOf(NativeLibraryUnavailableException.class)
        .hasMessage(
            "ZFS is not available on this host: /dev/zfs: ENOENT (is the zfs kernel module"
                + " loaded?)");
    assertThat(library.lastFailure()).contains("ENOENT");
    assertThatThrownBy(library::require).isInstanceOf(NativeLibraryUnavailableException.class);

    library.require(); // the module appeared: the third init succeeds
    library.require();
    library.require();
    assertThat(library.isInitialized()).isTrue();
    assertThat(library.lastFailure()).isNull();
    assertThat(inits).as("init runs until it succeeds, then never again").hasValue(3);
  }

  @Test
  void permissionProblemsSaySo() {
    ZfsLibrary library = new ZfsLibrary(() -> PRESENT, () -> ZfsErrors.EACCES);
    assertThatThrownBy(library::require)
        .hasMessage("ZFS is not available on this host: /dev/zfs: EACCES (ZFS needs root or"
            + " CAP_SYS_ADMIN)");
  }
}

package dev.caravan.storage.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.NativeLibraryUnavailableException;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link Zfs#open()} refuses a zfs module of a version its {@code zfs_cmd_t} layout was not verified
 * for, before anything reaches {@code /dev/zfs}: so this runs anywhere, ZFS or not. The guest's real
 * module is accepted in {@code ZfsGuestTest}.
 */
class ZfsModuleVersionCheckTest {
  @Test
  void refusesAnUnverifiedModuleBeforeOpeningTheDevice() {
    for (String version : new String[] {"2.4.0", "2.4.0-1~bpo12+1", "2.3.1-1"}) {
      assertThatThrownBy(() -> Zfs.open(ManagedBy.CARAVAN, () -> Optional.of(version)))
          .isInstanceOf(NativeLibraryUnavailableException.class)
          .hasMessageStartingWith("ZFS is not supported on this host: the loaded OpenZFS kernel module is "
              + version.split("-", -1)[0] + " (/sys/module/zfs/version: '" + version + "')")
          .hasMessageContaining("verified only for OpenZFS 2.2.0-2.2.11, 2.3.0, 2.3.2-2.3.9");
    }
  }

  @Test
  void refusesAVersionItCannotRead() {
    assertThatThrownBy(() -> Zfs.open(ManagedBy.CARAVAN, () -> Optional.of("garbage")))
        .isInstanceOf(NativeLibraryUnavailableException.class)
        .hasMessageContaining("the loaded OpenZFS kernel module's version cannot be read")
        .hasMessageContaining("'garbage'");
  }

  @Test
  void aVerifiedVersionGoesOnToOpenTheDevice() {
    AtomicInteger reads = new AtomicInteger();
    try (Zfs zfs =
        Zfs.open(
            ManagedBy.CARAVAN,
            () -> {
              reads.incrementAndGet();
              return Optional.of("2.3.2-2~bpo12+2");
            })) {
      assertThat(zfs.marker()).isEqualTo(ManagedBy.CARAVAN); // only where ZFS is real
    } catch (NativeLibraryUnavailableException e) {
      // A host without ZFS: past the version check, refused for the missing device instead.
      assertThat(e.getMessage()).startsWith("ZFS is not available on this host");
    }
    assertThat(reads).hasValue(1);
  }
}

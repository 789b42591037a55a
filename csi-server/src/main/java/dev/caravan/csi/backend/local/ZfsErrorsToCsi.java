package dev.caravan.csi.backend.local;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.CsiException.Kind;
import dev.caravan.storage.NativeLibraryUnavailableException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.zfs.ZfsException;
import dev.caravan.storage.zfs.ZfsRefusedException;
import java.util.function.Supplier;

/** Maps the ZFS facade's failures to CSI error kinds, keeping the facade's message. */
final class ZfsErrorsToCsi {
  private ZfsErrorsToCsi() {}

  static <T> T guard(Supplier<T> body) {
    try {
      return body.get();
    } catch (CsiException e) {
      throw e;
    } catch (ZfsRefusedException e) {
      Kind kind = switch (e.reason()) {
        case SHRINK -> Kind.OUT_OF_RANGE;
        case POOL_UNAVAILABLE -> Kind.UNAVAILABLE;
        case NOT_MANAGED, HAS_SNAPSHOTS, HAS_CHILDREN, HAS_CLONES, NOT_A_VOLUME, IN_USE, NOT_ENCRYPTED ->
            Kind.FAILED_PRECONDITION;
      };
      throw new CsiException(kind, e.getMessage(), e);
    } catch (ZfsException e) {
      Kind kind = switch (e.errnoName()) {
        case "ENOSPC", "EDQUOT" -> Kind.RESOURCE_EXHAUSTED;
        case "EBUSY" -> Kind.FAILED_PRECONDITION;
        case "ENOENT" -> Kind.NOT_FOUND;
        case "EEXIST" -> Kind.ALREADY_EXISTS;
        case "ENODEV" -> Kind.FAILED_PRECONDITION;
        case "ETIMEDOUT", "EIO", "ENXIO" -> Kind.UNAVAILABLE;
        default -> Kind.INTERNAL;
      };
      throw new CsiException(kind, "ZFS: " + e.getMessage(), e);
    } catch (NativeLibraryUnavailableException e) {
      throw new CsiException(Kind.UNAVAILABLE, e.getMessage(), e);
    } catch (StorageException e) {
      throw new CsiException(Kind.INTERNAL, e.getMessage(), e);
    }
  }

  static void run(Runnable body) {
    guard(() -> {
      body.run();
      return null;
    });
  }
}

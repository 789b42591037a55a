/**
 * The FFM bindings host-storage calls: jextract output for libblkid, libzfs_core/libnvpair,
 * libopeniscsiusr, libcryptsetup and Linux UAPI constants, and {@link
 * dev.caravan.bindings.NativeLibraries}.
 *
 * <p>Only {@code NativeLibraries} is API (which of the libraries can be opened here, and the Debian
 * package that ships a missing one). The generated packages mirror C headers and change whenever
 * they are regenerated, so they are exported to host-storage alone. On the module path the JVM
 * needs {@code --enable-native-access=dev.caravan.bindings,dev.caravan.storage}; on the class path,
 * {@code ALL-UNNAMED}.
 */
// "module": the qualified exports name host-storage, which is built after this module, so javac
// cannot find it here; it is checked where it matters, when host-storage compiles against it.
@SuppressWarnings("module")
module dev.caravan.bindings {
  exports dev.caravan.bindings;
  exports dev.caravan.bindings.blkid to
      dev.caravan.storage;
  exports dev.caravan.bindings.crypt to
      dev.caravan.storage;
  exports dev.caravan.bindings.iscsi to
      dev.caravan.storage;
  exports dev.caravan.bindings.linux to
      dev.caravan.storage;
  exports dev.caravan.bindings.zfs to
      dev.caravan.storage;
}

/**
 * Caravan host-storage: the host's block devices, filesystems, mounts, ZFS, iSCSI and LUKS2 through
 * system calls and C libraries; see the {@code dev.caravan.storage} package for where to start.
 *
 * <p>The exported packages are the API. The {@code dev.caravan.storage.internal} packages (the
 * libc, libblkid, libzfs_core, libopeniscsiusr and libcryptsetup wrappers the API is built on) are
 * not exported: an agent that puts this module on its module path cannot reach them. On the class
 * path nothing enforces that; they are still not API.
 *
 * <p>On the module path the JVM needs {@code
 * --enable-native-access=dev.caravan.bindings,dev.caravan.storage} (both modules call restricted
 * FFM methods); on the class path, {@code --enable-native-access=ALL-UNNAMED}. Under {@code
 * --illegal-native-access=deny} without them, the calls of the block, file, fs and mount packages
 * throw {@code NativeAccessDeniedException}, whose message names the flag.
 */
module dev.caravan.storage {
  // Transitive: NativeLibraries (in the bindings' one exported package) is how an embedder learns
  // which library a feature lacks and which Debian package ships it.
  requires transitive dev.caravan.bindings;

  exports dev.caravan.storage;
  exports dev.caravan.storage.block;
  exports dev.caravan.storage.crypt;
  exports dev.caravan.storage.exec;
  exports dev.caravan.storage.file;
  exports dev.caravan.storage.fs;
  exports dev.caravan.storage.iscsi;
  exports dev.caravan.storage.mount;
  exports dev.caravan.storage.multipath;
  exports dev.caravan.storage.zfs;
}

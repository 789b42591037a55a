# Sourced (bash) by scripts/guest-test and scripts/guest/setup. Answers three questions the
# harness asks on every run: which guest kernel and which ZFS this host has installed, where the
# cache for that pair lives, and whether everything a boot needs is already in place. Cheap on
# purpose (dpkg-query, modinfo, file tests): the cached path of `guest-test run` must cost ~0.1 s.

# Physical paths (-P): the checkout is shared with the guest, and compared with paths the
# caller gives, by its real location.
GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
CARAVAN_ROOT=$(cd "$GUEST_DIR/../.." && pwd -P)

guest_say() { echo "guest-test: $*" >&2; }
guest_die() { guest_say "$*"; exit 1; }

# The cache sits outside the checkout when we can write there (or someone already created it),
# so that every clone on this machine, CI's fresh ones included, reuses one setup.
guest_cache_root() {
  if [ -n "${CARAVAN_GUEST_CACHE-}" ]; then
    echo "$CARAVAN_GUEST_CACHE"
  elif [ -d /var/cache/caravan-guest ] || [ -w /var/cache ]; then
    echo /var/cache/caravan-guest
  else
    echo "$CARAVAN_ROOT/.guest-cache"
  fi
}

guest_pkg_installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# The guest kernel is whatever the linux-image-amd64 metapackage points at (Debian's own
# 6.1 kernel on bookworm), e.g. 6.1.0-57-amd64. CARAVAN_GUEST_KVER pins another installed one.
guest_kver() {
  if [ -n "${CARAVAN_GUEST_KVER-}" ]; then echo "$CARAVAN_GUEST_KVER"; return; fi
  guest_pkg_installed linux-image-amd64 || return 0
  dpkg-query -W -f='${Depends}' linux-image-amd64 | grep -o 'linux-image-[0-9][^ ,]*' | head -n1 |
    sed 's/^linux-image-//'
}

# Full Debian version of the ZFS userland (e.g. 2.3.2-2~bpo12+2). The kernel module, built by
# DKMS from zfs-dkms, must be the same release, or zpool/libzfs_core refuse to talk to it.
guest_zfs_version() {
  guest_pkg_installed zfsutils-linux || return 0
  dpkg-query -W -f='${Version}' zfsutils-linux
}

# zfs.ko for the guest kernel, as DKMS installed it; empty when missing.
guest_zfs_module_version() {
  modinfo -k "$1" -F version zfs 2>/dev/null | head -n1
}

# Sets GUEST_KVER, GUEST_ZVER, GUEST_CACHE and GUEST_KEYDIR (the cache for this kernel + ZFS).
guest_resolve() {
  GUEST_KVER=$(guest_kver)
  GUEST_ZVER=$(guest_zfs_version)
  GUEST_CACHE=$(guest_cache_root)
  GUEST_KEYDIR=$GUEST_CACHE/${GUEST_KVER:-none}_zfs-${GUEST_ZVER:-none}
}

# The initramfs is keyed by the scripts that make it, so editing init or mkinitrd rebuilds it
# on the next run without a full setup.
guest_initrd_path() {
  local h
  h=$(cat "$GUEST_DIR/init" "$GUEST_DIR/mkinitrd" | sha256sum | cut -c1-12)
  echo "$GUEST_KEYDIR/initrd-$h.cpio.gz"
}

# Prints why the host is not ready to boot a ZFS guest (one reason per line); prints nothing
# when it is. Call guest_resolve first.
guest_not_ready() {
  local p
  for p in qemu-system-x86 busybox-static udev kmod cpio open-iscsi multipath-tools iptables cryptsetup-bin \
    zfsutils-linux zfs-dkms; do
    guest_pkg_installed "$p" || echo "package $p is not installed"
  done
  [ -n "$GUEST_KVER" ] || { echo "no guest kernel (linux-image-amd64) installed"; return; }
  [ -r "/boot/vmlinuz-$GUEST_KVER" ] || echo "/boot/vmlinuz-$GUEST_KVER is missing"
  [ -n "$GUEST_ZVER" ] || return 0
  local mod
  mod=$(guest_zfs_module_version "$GUEST_KVER")
  case $mod in
    "") echo "no zfs module built for $GUEST_KVER" ;;
    "${GUEST_ZVER%%-*}"*) ;;
    *) echo "zfs module $mod for $GUEST_KVER does not match the userland $GUEST_ZVER" ;;
  esac
  [ -r "$GUEST_KEYDIR/vmlinux" ] || echo "no guest kernel image in $GUEST_KEYDIR"
  [ -e "$GUEST_KEYDIR/ready" ] || echo "setup has not completed for $GUEST_KEYDIR"
}

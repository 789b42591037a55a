# An immediate-mode volume on a ZFS zvol (the local backend), on a client where the plugins were
# installed with
#   caravan dhv install --plugin-dir /opt/nomad/data/host_volume_plugins --driver local \
#     --option pools=tank [--option parent-dataset=caravan]
# `nomad volume create volume-zvol.hcl` creates tank/caravan/vol-..., formats it and mounts it at
# <host_volumes_dir>/<volume id>; every agent start mounts it again. A larger capacity_min grows
# the zvol and its filesystem; delete refuses a zvol that has snapshots.
type      = "host"
name      = "pgdata-zfs"
plugin_id = "caravan-local"

capacity_min = "4GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

parameters {
  fsType      = "xfs"
  compression = "lz4"
  mode        = "0700"
}

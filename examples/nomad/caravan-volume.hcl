# `nomad volume create examples/nomad/caravan-volume.hcl`
# A node-local volume on the file backend: a sparse file on the node whose plugin answers CreateVolume,
# pinned there by the topology segment caravan.csi/node that Caravan returns.
id        = "pgdata"
name      = "pgdata"
type      = "csi"
plugin_id = "caravan"

capacity_min = "1GiB"
capacity_max = "2GiB"

# Caravan volumes are block devices attached to one node at a time: single-node modes only.
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}

mount_options {
  fs_type     = "xfs"
  mount_flags = ["noatime"]
}

# Known parameters of the file backend: fsType (ext4|xfs) and encryption (off|on; see
# caravan-file-encrypted-volume.hcl). Anything else is rejected with the list.
parameters {
  fsType = "xfs"
}

# An immediate-mode volume: `nomad volume create volume-immediate.hcl` provisions a file image on one
# node, formats it and mounts it there; every agent start mounts it again. Grow it by raising
# capacity_min and running `nomad volume create` again with the volume's id added.
type      = "host"
name      = "pgdata"
plugin_id = "caravan-file"

capacity_min = "1GiB"
capacity_max = "10GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

parameters {
  fsType = "ext4"   # or xfs
  mode   = "0700"   # of the mounted filesystem's root
  uid    = "999"
  gid    = "999"
}

# `nomad volume create examples/nomad/caravan-local-volume.hcl`
# A ZFS zvol on one node (the local backend: caravan-local-docker.nomad.hcl or
# caravan-local.nomad.hcl), pinned to that node by the topology segment caravan.csi/node that
# Caravan returns, so Nomad places the consumers there.
id        = "pgdata-zfs"
name      = "pgdata-zfs"
type      = "csi"
plugin_id = "caravan-local"

# Grow only: `nomad volume create` with a larger capacity_min later grows the zvol and its filesystem.
capacity_min = "10GiB"
capacity_max = "20GiB"

# A zvol is attached to one node at a time: single-node modes only.
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime"]
}

# Every parameter of the local backend; anything else is refused (INVALID_ARGUMENT listing these).
parameters {
  # A pool from the plugin's allowlist (`local { pools = [...] }`); default: local.default_pool, else
  # the first pool of the list.
  pool = "tank"
  # `auto`: this node, or with peers (docs/operating.md, "Many nodes") the node with the most free bytes after
  # what its volumes were promised; or a node id to put the volume there. Default: auto.
  host = "auto"
  # ext4 or xfs (default ext4); where mount_options.fs_type is given too, the two must agree.
  fsType = "ext4"
  # The zvol's block size: a power of two from 4K to 128K. Default 16K. Fixed at create.
  volblocksize = "16K"
  # true: no refreservation (thin; the pool can run out under the filesystem). Default false.
  sparse = "false"
  # on, off, lzjb, gzip, zle, lz4 or zstd. Default: inherited from the pool's dataset.
  compression = "lz4"
  # off or on: ZFS native encryption, the passphrase from the volume's secrets
  # (caravan-local-encrypted-volume.hcl, docs/encryption.md). Default off.
  encryption = "off"
  # replicas, replicationInterval and replicaNodes: copies on other nodes
  # (caravan-local-replicated-volume.hcl, docs/replication.md). Default: no copy.
}

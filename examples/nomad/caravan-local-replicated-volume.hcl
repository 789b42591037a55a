# `nomad volume create examples/nomad/caravan-local-replicated-volume.hcl`
# A ZFS zvol on one node with a copy on another (the local backend with peers: docs/operating.md,
# "Many nodes"; docs/replication.md). The copy is asynchronous: what was written after its newest
# replication snapshot is lost with the owner's node.
id        = "pgdata-zfs-replicated"
name      = "pgdata-zfs-replicated"
type      = "csi"
plugin_id = "caravan-local"

capacity_min = "10GiB"
capacity_max = "20GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

parameters {
  host = "auto"
  # How many other nodes hold a copy: 0 (the default: none) up to the number of other nodes.
  replicas = "1"
  # How often the copies are brought up to date: a replication snapshot, then an incremental send of
  # it over the peer channel. Seconds, minutes or hours (30s, 1m, 2h); at least 5s. Default 1m.
  replicationInterval = "1m"
  # Which nodes hold the copies (as many as replicas, never the volume's own node). Without it, the
  # nodes with the most free bytes are chosen when the volume is created.
  replicaNodes = "node-b"
}

# `nomad volume create examples/nomad/caravan-file-replicated-volume.hcl`
# A sparse file on one node (the file backend) with a copy on another, brought up to date by changed
# blocks over the peer channel: the plugin of caravan-many-nodes.nomad.hcl (docs/replication.md, "The
# file backend"). For tests and trials without ZFS; the copy is asynchronous: what was written after
# its newest copy is lost with the owner's node.
id        = "ledger-replicated"
name      = "ledger-replicated"
type      = "csi"
plugin_id = "caravan"

capacity_min = "1GiB"
capacity_max = "2GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

parameters {
  fsType = "ext4"
  # How many other nodes hold a copy: 0 (the default: none) up to the number of other nodes.
  replicas = "1"
  # How often the copies are brought up to date. Seconds, minutes or hours (30s, 1m, 2h); at least 5s.
  # Default 1m. The alert CaravanReplicationLagging (../prometheus/caravan-alerts.yml) fires when a copy
  # is older than twice this.
  replicationInterval = "1m"
  # Which nodes hold the copies (as many as replicas, never the volume's own node). Without it, the
  # nodes with the most free bytes are chosen when the volume is created.
  replicaNodes = "node-b"
}

# `nomad volume create examples/nomad/caravan-file-encrypted-volume.hcl`
# A sparse file on one node (the file backend), encrypted with LUKS2 on its loop device
# (docs/encryption.md); the node needs device-mapper's crypt target. Nomad passes the secrets block to
# CreateVolume and NodeStageVolume: the passphrase opens the mapping at each stage, and the mapping is
# closed at each unstage.
id        = "ledger"
name      = "ledger"
type      = "csi"
plugin_id = "caravan"

capacity_min = "1GiB"
capacity_max = "2GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

# Known parameters of the file backend: fsType (ext4|xfs) and encryption (off, the default, or on).
parameters {
  fsType     = "ext4"
  encryption = "on"
}

secrets {
  # 8 to 512 bytes. Keep it out of version control: render this file from your secret store just
  # before `nomad volume create`, and remove it after.
  encryptionPassphrase = "replace me: a long passphrase from your secret store"
}

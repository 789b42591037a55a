# `nomad volume create examples/nomad/caravan-local-encrypted-volume.hcl`
# A ZFS zvol on one node (the local backend), encrypted with ZFS native encryption
# (docs/encryption.md). Nomad passes the secrets block to CreateVolume and NodeStageVolume: the
# passphrase opens the zvol at each stage, and its key is unloaded at each unstage.
id        = "vault-data"
name      = "vault-data"
type      = "csi"
plugin_id = "caravan-local"

capacity_min = "10GiB"
capacity_max = "20GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

mount_options {
  fs_type = "ext4"
}

parameters {
  # off (the default) or on.
  encryption = "on"
  pool       = "tank"
}

secrets {
  # 8 to 512 bytes. Keep it out of version control: render this file from your secret store just
  # before `nomad volume create`, and remove it after.
  encryptionPassphrase = "replace me: a long passphrase from your secret store"
  # To rotate (docs/encryption.md): the new passphrase above, the current one here, then
  # `nomad volume register` this file; the next stage changes the passphrase. Remove this line after.
  # encryptionPassphrasePrevious = "the passphrase being replaced"
}

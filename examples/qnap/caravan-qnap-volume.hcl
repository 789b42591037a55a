# `nomad volume create examples/qnap/caravan-qnap-volume.hcl`
# An iSCSI LUN on the QNAP appliance, reachable from every node: ControllerPublish admits the initiator
# of the node Nomad places the consumer on, and refuses a second node while the first holds it.
id        = "mysql-data"
name      = "mysql-data"
type      = "csi"
plugin_id = "caravan-qnap"

# Whole GiB only: the appliance sizes LUNs in GiB, and a size that is not is refused, never rounded.
capacity_min = "20GiB"
capacity_max = "20GiB"

# One writer at a time: the fence is per node.
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

mount_options {
  fs_type     = "xfs"
  mount_flags = ["noatime"]
}

# Every parameter of the qnap backend; anything else is refused (INVALID_ARGUMENT listing these).
parameters {
  # The appliance's storage pool id (a number); default: qnap.default_pool of the controller's config.
  pool = "1"
  # true: a thin LUN; false: thick (the space is allocated at create). Default true.
  thin = "true"
  # ext4 or xfs (default ext4); where mount_options.fs_type is given too, the two must agree.
  fsType = "xfs"
  # off (the default) or on: LUKS2 on the node's multipath map, opened at each stage with the passphrase
  # in the secrets below (encryptionPassphrase). An encrypted LUN is the smallest whole GiB that holds
  # the size and the 16 MiB header, and its capacity is that less the header: 20GiB asked for makes a
  # 21 GiB LUN, so capacity_max must allow the extra (docs/encryption.md).
  encryption = "off"
}

# With CHAP configured (qnap.chap_user_secret / chap_password_secret in the controller's config), the
# node reads the credentials from the volume's secrets under those names:
# secrets {
#   chapUser     = "node-initiator"
#   chapPassword = "..."
# }
# With encryption = "on", the passphrase too (8 to 512 bytes; render the file from your secret store):
# secrets {
#   encryptionPassphrase = "..."
#   # To rotate (docs/encryption.md): the new passphrase above, the current one here, then
#   # `nomad volume register` this file; the next stage changes the passphrase. Remove this line after.
#   # encryptionPassphrasePrevious = "..."
# }

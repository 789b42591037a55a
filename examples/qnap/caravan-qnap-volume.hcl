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
}

# With CHAP configured (qnap.chap_user_secret / chap_password_secret in the controller's config), the
# node reads the credentials from the volume's secrets under those names:
# secrets {
#   chapUser     = "node-initiator"
#   chapPassword = "..."
# }

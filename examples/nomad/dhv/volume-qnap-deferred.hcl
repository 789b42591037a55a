# A deferred-binding volume on a QNAP appliance (docs/dhv-deferred-binding.md): an iSCSI LUN that
# any client with the plugin can attach, one client at a time. Install the plugins on every client
# (as root; the credentials file holds `user=` and `password=` lines and must be mode 0600: Nomad
# gives plugins an empty environment, so it is the only way the appliance's password reaches them,
# and only its path is written into the plugin executables):
#   caravan dhv install --plugin-dir /opt/nomad/data/host_volume_plugins --driver qnap \
#     --option url=https://nas.example:443 --option ca-file=/etc/caravan/nas-ca.pem \
#     --option portals=10.0.0.5:3260,10.0.1.5:3260 --option credentials-file=/etc/caravan/qnap.properties
# create makes the LUN and its target on the appliance and binds no node; publish (on the client
# where an allocation starts) admits that client's iSCSI initiator name to the target's ACL, logs in
# on every portal, formats the LUN only if it is empty and mounts it at
# <host_volumes_dir>/<volume id>; a publish on another client while one holds it is refused, naming
# the holder's initiator. unpublish unmounts, logs out and removes the client from the ACL. delete
# is refused while a client holds the LUN or the LUN has snapshots.
# Current Nomad releases do not call publish/unpublish: this spec shows the proposal's shape.
type      = "host"
name      = "orders-db"
plugin_id = "caravan-qnap-deferred"

capacity_min = "20GiB"   # whole GiB: QNAP LUNs are sized in GiB, and Caravan never rounds

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

parameters {
  fsType = "xfs"   # or ext4
  pool   = "1"     # the appliance's storage pool id (default: the default-pool option, else 1)
  thin   = "true"
  mode   = "0700"
}

# A deferred-binding volume (docs/dhv-deferred-binding.md). Current Nomad releases do not call
# publish/unpublish: this spec shows the proposal's shape. With today's Nomad the deferred plugin's
# create only provisions storage, and no path is mounted on any node.
type      = "host"
name      = "shared-cache"
plugin_id = "caravan-file-deferred"

capacity_min = "2GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

parameters {
  fsType = "xfs"
}

# Nomad client agent settings for Caravan's Dynamic Host Volume plugins (Nomad 1.10+).
# Then, as root on this client:
#   /opt/caravan/bin/caravan dhv install --plugin-dir /opt/nomad/data/host_volume_plugins
# and restart (or SIGHUP) the agent: `nomad node status -self -verbose` lists
# plugins.host_volume.caravan-file.version and plugins.host_volume.caravan-file-deferred.version.
client {
  enabled = true

  # Where the plugin executables are (the default is <data_dir>/host_volume_plugins).
  host_volume_plugin_dir = "/opt/nomad/data/host_volume_plugins"

  # Where volumes are mounted: each one at <host_volumes_dir>/<volume id>.
  host_volumes_dir = "/opt/nomad/data/host_volumes"
}

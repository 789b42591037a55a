# Caravan as a monolith CSI plugin (controller + node on one socket) on every client, file backend.
#
# raw_exec has no filesystem isolation, so Nomad points CSI_ENDPOINT at the host socket path
# (<state_dir>/csi/plugins/<alloc-id>/csi.sock) and Caravan reads it from the environment. The paths
# Nomad sends in NodeStage/NodePublish are rooted at stage_publish_base_dir, so it must be set to the
# host mount root <state_dir>/csi/monolith/<plugin id> (docs/nomad-csi.md §1.1, hashicorp/nomad#11885).
# Adjust nomad_client_state_dir to your client's state_dir (default: <data_dir>/client).

variable "nomad_client_state_dir" {
  type    = string
  default = "/opt/nomad/data/client"
}

variable "caravan_home" {
  description = "Where Caravan is: the unpacked distribution (bin/caravan), /usr/lib/caravan from the Debian package, or a built checkout."
  type        = string
  default     = "/opt/caravan"
}

job "caravan-plugin" {
  type = "system"

  group "plugin" {
    restart {
      attempts = 10
      interval = "5m"
      delay    = "5s"
      mode     = "delay"
    }

    task "plugin" {
      driver = "raw_exec"

      config {
        command = "${var.caravan_home}/bin/caravan"
        args = [
          "serve",
          "--driver=file",
          "--node-id=${node.unique.name}",
          "--data-dir=/var/lib/caravan/file",
        ]
      }

      csi_plugin {
        id                     = "caravan"
        type                   = "monolith"
        stage_publish_base_dir = "${var.nomad_client_state_dir}/csi/monolith/caravan"
        health_timeout         = "60s"
      }

      # SIGTERM drains in-flight calls (10 s by default) and removes the socket; mounts and loop
      # devices stay, so stop consumers before the plugin (a node drain does this).
      kill_timeout = "15s"

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}

# Caravan's `local` backend (node-local ZFS zvols) as a monolith CSI plugin on every client, from the
# distribution: the Debian package (/usr/lib/caravan) or the unpacked tarball. It brings its own Java
# runtime and the AOT cache made at build time, so the client needs no JDK. raw_exec must be enabled.
# The image instead: caravan-local-docker.nomad.hcl.
#
# raw_exec has no filesystem isolation: Nomad points CSI_ENDPOINT at the host socket path, and the
# paths it sends in NodeStage/NodePublish are rooted at stage_publish_base_dir, which must therefore
# be the host mount root <state_dir>/csi/monolith/<plugin id> (docs/nomad-csi.md §1.1).

variable "nomad_client_state_dir" {
  type    = string
  default = "/opt/nomad/data/client"
}

variable "caravan_home" {
  description = "/usr/lib/caravan from the Debian package, or where the tarball was unpacked."
  type        = string
  default     = "/usr/lib/caravan"
}

variable "zfs_pool" {
  description = "The pool Caravan may create zvols in (it touches no other)."
  type        = string
  default     = "tank"
}

job "caravan-local" {
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
          "--driver=local",
          "--node-id=${node.unique.name}",
          "--data-dir=/var/lib/caravan/local",
          "--config=${NOMAD_TASK_DIR}/caravan.hcl",
        ]
      }

      # serve's config file; the pool allowlist has no flag.
      template {
        destination = "local/caravan.hcl"
        data        = <<-EOT
          local {
            pools = ["${var.zfs_pool}"]
          }
        EOT
      }

      csi_plugin {
        id                     = "caravan-local"
        type                   = "monolith"
        stage_publish_base_dir = "${var.nomad_client_state_dir}/csi/monolith/caravan-local"
        health_timeout         = "60s"
      }

      # SIGTERM drains in-flight calls and removes the socket; zvols and mounts stay.
      kill_timeout = "15s"

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}

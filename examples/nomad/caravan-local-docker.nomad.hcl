# Caravan's `local` backend (node-local ZFS zvols) as a monolith CSI plugin on every client, in the
# OCI image the build makes (dist/target/caravan-<version>-oci.tar, an oci-archive). Put it where
# each client's Docker finds it, e.g.
#   skopeo copy oci-archive:caravan-0.1.0-SNAPSHOT-oci.tar docker-daemon:caravan:0.1.0-SNAPSHOT
# or push it to your registry with `skopeo copy oci-archive:... docker://registry/caravan:...`.
#
# The client's docker plugin must allow privileged containers and host volumes:
#   plugin "docker" { config { allow_privileged = true  volumes { enabled = true } } }
#
# Inside the container Nomad bind-mounts, with bidirectional propagation, the socket directory at
# csi_plugin.mount_dir (/csi, CSI_ENDPOINT=unix:///csi/csi.sock) and the host mount root at
# stage_publish_base_dir (/local/csi, Caravan's default allowed root in a task), plus /dev.
# What must outlive the container comes from the host: the data directory, where the node journal
# of what is staged and published lives in a container (docs/failover.md: a restarted plugin
# unstages from it).

variable "caravan_image" {
  type    = string
  default = "caravan:0.1.0-SNAPSHOT"
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
      driver = "docker"

      config {
        image      = var.caravan_image
        privileged = true
        # zvols are created by the host's ZFS module: the container reaches it through /dev/zfs.
        volumes = [
          "/var/lib/caravan/local:/var/lib/caravan/local",
        ]
        args = [
          "serve",
          "--driver=local",
          "--node-id=${node.unique.name}",
          "--data-dir=/var/lib/caravan/local",
          "--config=/local/caravan.hcl",
        ]
      }

      # serve's config file, rendered into the task directory; the pool allowlist has no flag.
      template {
        destination = "local/caravan.hcl"
        data        = <<-EOT
          local {
            pools = ["${var.zfs_pool}"]
          }
        EOT
      }

      csi_plugin {
        id             = "caravan-local"
        type           = "monolith"
        health_timeout = "60s"
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

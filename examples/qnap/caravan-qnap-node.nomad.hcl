# Caravan's qnap node plugin: one per client (a system job), as root on the host, because iscsiadm,
# iscsid's socket, the node database (/etc/iscsi) and multipathd's socket are the host's.
# /etc/caravan/qnap-node.hcl is qnap-node.hcl here: the portals and this node's id (its initiator
# name), and no appliance URL or account, which only the controller needs.

variable "caravan_home" {
  type    = string
  default = "/opt/caravan"
}

job "caravan-qnap-node" {
  type = "system"

  group "node" {
    task "node" {
      driver = "raw_exec"

      config {
        command = "${var.caravan_home}/bin/caravan"
        args    = ["serve", "--driver=qnap", "--config=/etc/caravan/qnap-node.hcl",
                   "--data-dir=/var/lib/caravan/qnap", "--http-listen=off"]
      }

      csi_plugin {
        id   = "caravan-qnap"
        type = "node"
      }

      kill_timeout = "15s"

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}

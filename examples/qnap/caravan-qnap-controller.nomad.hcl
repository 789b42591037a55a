# Caravan's qnap controller: one instance, anywhere that reaches the appliance's management port.
# It provisions LUNs and fences them; caravan-qnap-node.nomad.hcl attaches them on the clients.

variable "caravan_home" {
  type    = string
  default = "/opt/caravan"
}

job "caravan-qnap-controller" {
  group "controller" {
    task "controller" {
      driver = "raw_exec"

      config {
        command = "${var.caravan_home}/bin/caravan"
        args    = ["serve", "--driver=qnap", "--config=/etc/caravan/qnap.hcl",
                   "--data-dir=/var/lib/caravan/qnap", "--http-listen=off"]
      }

      csi_plugin {
        id   = "caravan-qnap"
        type = "controller"
      }

      # SIGTERM logs out of the appliance.
      kill_timeout = "15s"

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}

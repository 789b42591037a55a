# Caravan's qnap controller: one instance, anywhere that reaches the appliance's management port.
# The node side (iSCSI login, multipath) is not built yet, so this job alone provisions LUNs and
# fences them; NodeStage answers UNIMPLEMENTED until the node plugin lands.

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
        args    = ["serve", "--driver=qnap", "--config=/etc/caravan/qnap.properties",
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

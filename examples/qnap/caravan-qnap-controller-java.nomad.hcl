# Caravan's qnap controller under Nomad's java driver, for clusters that run JVM services that way:
# the same controller as caravan-qnap-controller.nomad.hcl (raw_exec), one instance anywhere that
# reaches the appliance's management port. The controller mounts nothing, which is why it can run
# under the java driver's chroot; the node plugin, which mounts into Nomad's mount root, runs as
# caravan-qnap-node.nomad.hcl does.
#
# The java driver runs the client's own `java`: it must be a JDK 25 (Nomad reports it as
# driver.java.version). The distribution's AOT cache is made for its own runtime, so it is not used
# here and the controller starts more slowly than from bin/caravan. The jar comes from the
# distribution tarball, fetched by the artifact block.

variable "caravan_tarball" {
  description = "Where clients download caravan-<version>-linux-x86_64.tar.gz from."
  type        = string
  default     = "https://artifacts.example.internal/caravan/caravan-0.1.0-SNAPSHOT-linux-x86_64.tar.gz"
}

job "caravan-qnap-controller" {
  group "controller" {
    task "controller" {
      driver = "java"

      artifact {
        source      = var.caravan_tarball
        destination = "local"
      }

      config {
        jar_path = "local/caravan-0.1.0-SNAPSHOT/lib/caravan.jar"
        # Native access for the bindings (FFM); the rest as bin/caravan runs it.
        jvm_options = ["--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                       "-XX:+UseSerialGC", "-XX:MaxRAM=256m", "-Xmx48m",
                       "-XX:TrimNativeHeapInterval=5000"]
        # The java driver runs tasks as nobody in a chroot: the config and the credentials come from
        # templates into the task's own directories, not from root-only files in /etc/caravan.
        args = ["serve", "--driver=qnap", "--config=/local/qnap.hcl",
                "--data-dir=/local/data", "--http-listen=off"]
      }

      # The appliance account, from Nomad Variables (nomad var put nomad/jobs/caravan-qnap-controller
      # user=... password=...): never in the jobspec, never on a command line.
      template {
        destination = "secrets/qnap-credentials"
        perms       = "0400"
        uid         = 65534
        gid         = 65534
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/caravan-qnap-controller" }}user={{ .user }}
          password={{ .password }}{{ end }}
        EOT
      }

      # examples/qnap/qnap.hcl, with the task's paths.
      template {
        destination = "local/qnap.hcl"
        data        = <<-EOT
          driver = "qnap"
          qnap {
            url              = "https://nas.example.internal:443"
            ca_file          = "/local/qnap-ca.pem"
            credentials_file = "/secrets/qnap-credentials"
            portals          = ["10.0.10.5", "10.0.20.5"]
            default_pool     = 1
            transport        = "auto"
          }
        EOT
      }

      # The appliance's CA certificate (public: a file in the task directory is fine).
      template {
        destination = "local/qnap-ca.pem"
        data        = "{{ with nomadVar \"nomad/jobs/caravan-qnap-controller\" }}{{ .ca }}{{ end }}"
      }

      csi_plugin {
        id   = "caravan-qnap"
        type = "controller"
      }

      # SIGTERM logs out of the appliance.
      kill_timeout = "15s"

      resources {
        cpu    = 200
        memory = 320
      }
    }
  }
}

# A job using the `pgdata` volume: each run appends a line to a file on the volume.
job "caravan-consumer" {
  type = "service"

  group "app" {
    count = 1

    volume "data" {
      type            = "csi"
      source          = "pgdata"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "app" {
      driver = "docker"

      config {
        image   = "busybox:1.36"
        command = "sh"
        args    = ["-c", "date >> /data/runs.log; cat /data/runs.log; sleep 3600"]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}

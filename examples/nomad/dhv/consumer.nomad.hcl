# A job using the immediate-mode volume "pgdata" (volume-immediate.hcl).
job "pg" {
  group "db" {
    volume "data" {
      type            = "host"
      source          = "pgdata"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "postgres" {
      driver = "docker"
      config {
        image = "postgres:16"
      }
      env {
        POSTGRES_PASSWORD_FILE = "/secrets/pg-password"
        PGDATA                 = "/var/lib/postgresql/data/pgdata"
      }
      volume_mount {
        volume      = "data"
        destination = "/var/lib/postgresql/data"
      }
      template {
        destination = "secrets/pg-password"
        data        = "{{ with nomadVar \"nomad/jobs/pg\" }}{{ .password }}{{ end }}"
      }
    }
  }
}

# Caravan as one monolith CSI plugin on every client, file backend, with its instances routing
# controller calls to the node that holds each volume (docs/operating.md, "Many nodes"). Untested
# against a real Nomad here (no Nomad in CI): the peer endpoint, discovery and certificate reload it relies on are
# tested in csi-server (PeersTest, PeerSecurityTest, NomadDiscoveryTest).
#
# Needs: Vault integration on the clients, a PKI role "caravan-peer" in the mount "pki" that may
# issue the node names (allowed_domains / allow_bare_domains, or allow_any_name on a PKI mount used
# for nothing else), and for discovery an ACL policy on the job's workload identity granting
#   namespace "default" { capabilities = ["read-job"] }
# (see docs/operating.md, "Many nodes", for the nomad acl policy apply command).

variable "nomad_client_state_dir" {
  type    = string
  default = "/opt/nomad/data/client"
}

variable "caravan_home" {
  type    = string
  default = "/opt/caravan"
}

job "caravan-plugin" {
  type = "system"

  group "plugin" {
    network {
      port "peer" {
        static = 9700
      }
    }

    # Every instance registers its peer endpoint; the others read these registrations.
    service {
      provider = "nomad"
      name     = "caravan-peer"
      port     = "peer"
      tags     = ["caravan-node=${node.unique.name}"]
    }

    task "plugin" {
      driver = "raw_exec"

      # The task API socket and the token that --peer-service reads Nomad with.
      identity {
        file = true
      }

      vault {}

      config {
        command = "${var.caravan_home}/bin/caravan"
        args = [
          "serve",
          "--driver=file",
          "--node-id=${node.unique.name}",
          "--data-dir=/var/lib/caravan/file",
          "--peer-listen=${NOMAD_IP_peer}:${NOMAD_PORT_peer}",
          "--peer-service=caravan-peer",
          "--peer-tls-cert=${NOMAD_SECRETS_DIR}/peer-cert.pem",
          "--peer-tls-key=${NOMAD_SECRETS_DIR}/peer-key.pem",
          "--peer-tls-ca=${NOMAD_SECRETS_DIR}/peer-ca.pem",
          "--placement-reserve=10GiB",
        ]
      }

      # One short-lived certificate per node, naming the node (a DNS subjectAltName). Caravan re-reads
      # the three files when they change, so renewals need no restart: change_mode = "noop".
      template {
        destination = "${NOMAD_SECRETS_DIR}/peer-cert.pem"
        change_mode = "noop"
        data        = <<-EOT
        {{ with pkiCert "pki/issue/caravan-peer" (printf "common_name=%s" (env "node.unique.name")) "ttl=72h" "private_key_format=pkcs8" }}{{ .Cert }}{{ end }}
        EOT
      }

      template {
        destination = "${NOMAD_SECRETS_DIR}/peer-key.pem"
        change_mode = "noop"
        perms       = "0600"
        data        = <<-EOT
        {{ with pkiCert "pki/issue/caravan-peer" (printf "common_name=%s" (env "node.unique.name")) "ttl=72h" "private_key_format=pkcs8" }}{{ .Key }}{{ end }}
        EOT
      }

      template {
        destination = "${NOMAD_SECRETS_DIR}/peer-ca.pem"
        change_mode = "noop"
        data        = <<-EOT
        {{ with pkiCert "pki/issue/caravan-peer" (printf "common_name=%s" (env "node.unique.name")) "ttl=72h" "private_key_format=pkcs8" }}{{ .CA }}{{ end }}
        EOT
      }

      csi_plugin {
        id                     = "caravan"
        type                   = "monolith"
        stage_publish_base_dir = "${var.nomad_client_state_dir}/csi/monolith/caravan"
        health_timeout         = "60s"
      }

      kill_timeout = "15s"

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}

# caravan serve --driver=qnap --config /etc/caravan/qnap.hcl
# Every flag of `caravan serve --help` is a key here (--http-listen is http_listen); flags win over
# the file. An unknown key or a bad value stops serve naming this file, the line and the rule.
driver = "qnap"

# The controller's config. The nodes' is qnap-node.hcl: portals and node id, no appliance account.

qnap {
  url = "https://nas.example.internal:443"
  # The appliance's CA (QTS ships a self-signed certificate: replace it, or export it as this CA).
  ca_file = "/etc/caravan/qnap-ca.pem"
  # user=... and password=..., readable by root only; or CARAVAN_QNAP_USER / CARAVAN_QNAP_PASSWORD.
  # Secrets are never written in this file: a password key here is refused.
  credentials_file = "/etc/caravan/qnap-credentials"
  # The iSCSI portals nodes log in to (two addresses for multipath).
  portals      = ["10.0.10.5", "10.0.20.5"]
  default_pool = 1
  # cgi (QTS 5.x, QuTS hero h5), rest (hero h5/h6) or auto (reads the firmware at start).
  transport = "auto"
  # Optional CHAP: the names of the keys in the volume's secrets that hold the credentials.
  # chap_user_secret     = "chapUser"
  # chap_password_secret = "chapPassword"
}

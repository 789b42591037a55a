# caravan serve --driver=qnap --config /etc/caravan/qnap-node.hcl, on every client (the node plugin).
# No qnap.url and no credentials: attaching needs only the iSCSI portals and the volume's context
# (target, LUN, WWID), so the nodes hold no appliance account, and a compromised node cannot reach
# the appliance's API. Such an instance refuses controller calls; the controller's config
# (qnap.hcl) names the appliance. Any appliance setting here without qnap.url stops serve.
driver = "qnap"

# This node's id is its iSCSI initiator name (InitiatorName in /etc/iscsi/initiatorname.iscsi): the
# controller admits it to a target's ACL on ControllerPublish.
node_id = "iqn.1993-08.org.debian:01:0123456789ab"

qnap {
  # The portals the leaked-session sweeper watches (the volumes' own portals come with each volume).
  portals = ["10.0.10.5", "10.0.20.5"]
}

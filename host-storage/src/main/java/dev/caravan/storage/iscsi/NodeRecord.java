package dev.caravan.storage.iscsi;

import java.util.Objects;

/**
 * A record in open-iscsi's node database ({@code /etc/iscsi/nodes}): the settings iscsiadm logs in
 * with for one target through one portal and interface.
 */
public record NodeRecord(String target, Portal portal, int tpgt, String iface) {
  public NodeRecord {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(portal, "portal");
    Objects.requireNonNull(iface, "iface");
  }
}

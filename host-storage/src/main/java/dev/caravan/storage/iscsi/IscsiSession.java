package dev.caravan.storage.iscsi;

import java.util.Objects;

/**
 * A logged-in iSCSI session, as the kernel reports it.
 *
 * @param sid the kernel's session number ({@code /sys/class/iscsi_session/session<sid>})
 * @param target the target's IQN
 * @param portal the portal the session logged in to
 * @param tpgt the target portal group tag
 * @param iface the open-iscsi interface it uses ({@code default} for software iSCSI over TCP)
 */
public record IscsiSession(int sid, String target, Portal portal, int tpgt, String iface) {
  public IscsiSession {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(portal, "portal");
    Objects.requireNonNull(iface, "iface");
  }

  /** Whether this is the session to {@code target} through {@code portal}. */
  public boolean isTo(String target, Portal portal) {
    return this.target.equals(target) && this.portal.equals(portal);
  }
}

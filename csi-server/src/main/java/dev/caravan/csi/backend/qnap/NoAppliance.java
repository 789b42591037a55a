package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import java.util.List;
import java.util.Optional;

/**
 * The appliance of a node-only instance (no {@code qnap.url}): there is none. The node side needs only
 * the volume context and open-iscsi, so a node plugin holds no appliance account, and a compromised
 * node cannot reach the appliance's API; every controller call is refused, naming why.
 */
final class NoAppliance implements QnapApi {
  static final String WHY = "this plugin instance serves the qnap node side only (its config has no qnap.url and"
      + " holds no appliance credentials); controller calls go to the controller instance, whose config names"
      + " the appliance";

  private static CsiException refused() {
    return CsiException.failedPrecondition(WHY);
  }

  @Override
  public Appliance appliance() {
    throw refused();
  }

  @Override
  public List<Lun> luns() {
    throw refused();
  }

  @Override
  public Optional<Lun> lun(int index) {
    throw refused();
  }

  @Override
  public Lun createLun(String name, long gib, int poolId, boolean thin) {
    throw refused();
  }

  @Override
  public Lun awaitReady(Lun lun) {
    throw refused();
  }

  @Override
  public Lun resizeLun(Lun lun, long gib) {
    throw refused();
  }

  @Override
  public void deleteLun(Lun lun) {
    throw refused();
  }

  @Override
  public List<Target> targets() {
    throw refused();
  }

  @Override
  public DefaultPolicy defaultPolicy(Target target) {
    throw refused();
  }

  @Override
  public void denyByDefault(Target target) {
    throw refused();
  }

  @Override
  public List<String> acl(Target target) {
    throw refused();
  }

  @Override
  public Target createTarget(String name) {
    throw refused();
  }

  @Override
  public void deleteTarget(Target target) {
    throw refused();
  }

  @Override
  public int map(Lun lun, Target target) {
    throw refused();
  }

  @Override
  public void unmap(Lun lun, Target target) {
    throw refused();
  }

  @Override
  public void allow(Target target, String initiatorIqn, Optional<Chap> chap) {
    throw refused();
  }

  @Override
  public void disallow(Target target, String initiatorIqn) {
    throw refused();
  }

  @Override
  public List<Snap> snapshots(Lun lun) {
    throw refused();
  }

  @Override
  public Snap createSnapshot(Lun lun, String name) {
    throw refused();
  }

  @Override
  public void deleteSnapshot(Lun lun, Snap snap) {
    throw refused();
  }

  @Override
  public Lun cloneSnapshot(Lun source, Snap snap, String newName, int poolId, boolean instant) {
    throw refused();
  }

  @Override
  public Pool pool(int poolId) {
    throw refused();
  }

  @Override
  public void close() {}
}

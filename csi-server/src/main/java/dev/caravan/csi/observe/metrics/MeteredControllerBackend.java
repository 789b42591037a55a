package dev.caravan.csi.observe.metrics;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CapacityReport;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.ExpandResult;
import dev.caravan.csi.backend.IdScheme;
import dev.caravan.csi.backend.SnapshotInfo;
import dev.caravan.csi.backend.Provisioned;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.VolumeStatus;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * A {@link ControllerBackend} that reports its mutating operations to {@link Metrics}: create (or
 * clone, when the request has a content source), destroy, snapshot, snapshot_destroy, grow, publish,
 * unpublish; outcome
 * ok, or the failure kind in lower case (not_found, failed_precondition...), or error.
 *
 * <p>And the fence: a publish the backend refuses with FAILED_PRECONDITION while the storage reports
 * the volume attached to another node is a fenced publish (one read of the volume's status, only
 * after such a refusal). A later unpublish that removes one of those holding nodes' attachments is a
 * forced detach: the attachment was keeping another node out, and now it is gone, which is what
 * {@code nomad volume detach} of a lost node causes. The controller cannot see whether the holder's
 * node plugin had unstaged, so this is the definition it can check; the memory of who fenced whom is
 * this instance's, so a detach sent to another controller instance, or after a restart, is not counted.
 */
public final class MeteredControllerBackend implements ControllerBackend {
  private final ControllerBackend delegate;
  private final Metrics metrics;
  private final String backend;
  /** Per volume, the nodes whose attachment refused another node's publish, until an unpublish removes it. */
  private final Map<String, Set<String>> fencing = new ConcurrentHashMap<>();

  public MeteredControllerBackend(ControllerBackend delegate, Metrics metrics, String backend) {
    this.delegate = delegate;
    this.metrics = metrics;
    this.backend = backend;
  }

  private <T> T timed(String op, Supplier<T> body) {
    long start = System.nanoTime();
    String outcome = "error";
    try {
      T result = body.get();
      outcome = "ok";
      return result;
    } catch (CsiException e) {
      outcome = e.kind().name().toLowerCase(Locale.ROOT);
      throw e;
    } finally {
      metrics.backendOperation(backend, op, outcome, System.nanoTime() - start);
    }
  }

  @Override
  public Set<String> knownParameters() {
    return delegate.knownParameters();
  }

  @Override
  public Optional<dev.caravan.csi.backend.Replication> replication() {
    return delegate.replication();
  }

  @Override
  public Optional<String> encryptionUnavailable() {
    return delegate.encryptionUnavailable();
  }

  @Override
  public Set<String> knownSnapshotParameters() {
    return delegate.knownSnapshotParameters();
  }

  @Override
  public IdScheme ids() {
    return delegate.ids();
  }

  @Override
  public Provisioned provisionVolume(VolumeRequest request) {
    return timed(request.source().isPresent() ? "clone" : "create", () -> delegate.provisionVolume(request));
  }

  @Override
  public void deleteVolume(String volumeId) {
    timed("destroy", () -> {
      delegate.deleteVolume(volumeId);
      return Boolean.TRUE;
    });
  }

  @Override
  public Optional<VolumeInfo> findVolume(String volumeId) {
    return delegate.findVolume(volumeId);
  }

  @Override
  public Optional<VolumeStatus> volumeStatus(String volumeId) {
    return delegate.volumeStatus(volumeId);
  }

  @Override
  public List<VolumeInfo> listVolumes() {
    return delegate.listVolumes();
  }

  @Override
  public SnapshotInfo createSnapshot(String sourceVolumeId, String name, Map<String, String> parameters) {
    return timed("snapshot", () -> delegate.createSnapshot(sourceVolumeId, name, parameters));
  }

  @Override
  public void deleteSnapshot(String snapshotId) {
    timed("snapshot_destroy", () -> {
      delegate.deleteSnapshot(snapshotId);
      return Boolean.TRUE;
    });
  }

  @Override
  public Optional<SnapshotInfo> findSnapshot(String snapshotId) {
    return delegate.findSnapshot(snapshotId);
  }

  @Override
  public List<SnapshotInfo> listSnapshots() {
    return delegate.listSnapshots();
  }

  @Override
  public ExpandResult expandVolume(String volumeId, CapacityRange range, AccessType accessType) {
    return timed("grow", () -> delegate.expandVolume(volumeId, range, accessType));
  }

  @Override
  public CapacityReport capacity(Map<String, String> parameters) {
    return delegate.capacity(parameters);
  }

  @Override
  public boolean publishes() {
    return delegate.publishes();
  }

  @Override
  public Map<String, String> publishVolume(String volumeId, String nodeId, Map<String, String> secrets) {
    try {
      return timed("publish", () -> delegate.publishVolume(volumeId, nodeId, secrets));
    } catch (CsiException e) {
      if (e.kind() == CsiException.Kind.FAILED_PRECONDITION) {
        List<String> others = attached(volumeId).orElse(List.of()).stream().filter(n -> !n.equals(nodeId)).toList();
        if (!others.isEmpty()) {
          metrics.fencedPublish(backend);
          fencing.computeIfAbsent(volumeId, k -> ConcurrentHashMap.newKeySet()).addAll(others);
        }
      }
      throw e;
    }
  }

  @Override
  public void unpublishVolume(String volumeId, Optional<String> nodeId) {
    timed("unpublish", () -> {
      delegate.unpublishVolume(volumeId, nodeId);
      return null;
    });
    Set<String> holders = fencing.get(volumeId);
    if (holders == null) {
      return;
    }
    List<String> detached = holders.stream().filter(h -> nodeId.map(h::equals).orElse(true)).sorted().toList();
    if (detached.isEmpty()) {
      return;
    }
    Optional<List<String>> still = attached(volumeId);
    if (still.isEmpty()) {
      return; // the storage did not answer: nothing is concluded, the next unpublish may tell
    }
    for (String h : detached) {
      if (!still.get().contains(h) && holders.remove(h)) {
        metrics.forcedDetach(backend);
      }
    }
    fencing.computeIfPresent(volumeId, (k, s) -> s.isEmpty() ? null : s);
  }

  /** The nodes the storage has the volume attached to; empty when it cannot tell. */
  private Optional<List<String>> attached(String volumeId) {
    try {
      return delegate.volumeStatus(volumeId).map(VolumeStatus::attachedNodes);
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }
}

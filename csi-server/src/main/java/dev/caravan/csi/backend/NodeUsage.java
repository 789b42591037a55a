package dev.caravan.csi.backend;

import dev.caravan.storage.block.DeviceUse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * What this node has staged and published, as its node journal records it. The journal is written
 * before the node changes the host, for every access type, so it is the one place that knows a
 * volume is in use even where nothing on the host shows it (a zvol bound at a target for block
 * access leaves no filesystem mount of the zvol). Backends read it to refuse DeleteVolume and to
 * report published nodes; the node package provides it, so backends never depend on that package.
 */
@FunctionalInterface
public interface NodeUsage {
  /** How {@code volumeId} is used on this node; empty when the journal has no record of it. */
  Optional<Use> of(String volumeId);

  /** For backends opened without a node service (tools that only read); nothing is in use. */
  static NodeUsage none() {
    return volumeId -> Optional.empty();
  }

  /**
   * DeleteVolume's refusal of a volume in use on this node: FAILED_PRECONDITION naming each use, the
   * journal's and the kernel's ({@code kernel}: a mount or a bind of the volume's device the journal
   * does not know of, made by hand or by a plugin whose record is gone). Returns when neither shows one.
   */
  default void refuseDeleteInUse(String volumeId, String nodeId, Optional<DeviceUse> kernel) {
    Optional<Use> use = of(volumeId);
    if (use.isPresent() || kernel.isPresent()) {
      throw CsiException.failedPrecondition(
          "volume_id " + volumeId + " is in use on node " + nodeId + ": "
              + Stream.concat(use.map(Use::describe).stream(), kernel.map(DeviceUse::describe).stream())
                  .collect(Collectors.joining("; "))
              + "; a volume in use is never deleted: unpublish and unstage it (NodeUnpublishVolume,"
              + " NodeUnstageVolume) first");
    }
  }

  /**
   * One volume's use on this node.
   *
   * @param device the device attached for it, once known
   * @param stagingPaths where it is staged (or being staged)
   * @param targets where it is published
   * @param unreadableRecord its journal record, when that cannot be read: what it recorded is
   *     unknown, so the volume counts as in use (the other fields are then empty)
   */
  record Use(AccessType accessType, Optional<Path> device, List<Path> stagingPaths, List<Path> targets,
      Optional<Path> unreadableRecord) {
    public Use {
      stagingPaths = List.copyOf(stagingPaths);
      targets = List.copyOf(targets);
    }

    public Use(AccessType accessType, Optional<Path> device, List<Path> stagingPaths, List<Path> targets) {
      this(accessType, device, stagingPaths, targets, Optional.empty());
    }

    /** A volume whose journal record {@code file} cannot be read. */
    public static Use unreadableRecord(Path file) {
      return new Use(AccessType.MOUNT, Optional.empty(), List.of(), List.of(), Optional.of(file));
    }

    /** E.g. "staged for block access at [/a] and published at [/b]", for error messages. */
    public String describe() {
      if (unreadableRecord.isPresent()) {
        return "its node journal record " + unreadableRecord.get() + " cannot be read, so whether it is still"
            + " staged or published here is unknown; once nothing of it is staged or published on this node, move"
            + " that file out of the journal directory";
      }
      List<String> parts = new ArrayList<>();
      String how = accessType == AccessType.BLOCK ? "block access" : "mount access";
      parts.add(stagingPaths.isEmpty() ? "recorded for " + how : "staged for " + how + " at " + stagingPaths);
      if (!targets.isEmpty()) {
        parts.add("published at " + targets);
      }
      return String.join(" and ", parts);
    }
  }
}

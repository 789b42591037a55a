package dev.caravan.csi.backend;

import java.util.List;

/** What ControllerGetVolume reports beside the volume: its health and the nodes using it. */
public record VolumeStatus(VolumeInfo volume, VolumeHealth health, List<String> attachedNodes) {
  public VolumeStatus {
    attachedNodes = List.copyOf(attachedNodes);
  }
}

package dev.caravan.csi.service;

import com.google.protobuf.BoolValue;
import dev.caravan.csi.support.BuildInfo;
import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Readiness;
import dev.caravan.csi.v1.GetPluginCapabilitiesRequest;
import dev.caravan.csi.v1.GetPluginCapabilitiesResponse;
import dev.caravan.csi.v1.GetPluginInfoRequest;
import dev.caravan.csi.v1.GetPluginInfoResponse;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.PluginCapability;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.ProbeResponse;
import io.grpc.stub.StreamObserver;
import java.util.regex.Pattern;

/** Identity: plugin name and version, capabilities, and Probe backed by the backend's readiness. */
public final class IdentityService extends IdentityGrpc.IdentityImplBase {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?");

  private final String pluginName;
  private final Backend backend;

  public IdentityService(String pluginName, Backend backend) {
    if (!NAME.matcher(pluginName).matches()) {
      throw new IllegalArgumentException(
          "plugin name '" + pluginName + "' must be 1-63 letters, digits, '.' or '-', starting and"
              + " ending with a letter or digit");
    }
    this.pluginName = pluginName;
    this.backend = backend;
  }

  public static String defaultName(String driver) {
    return "caravan.csi." + driver;
  }

  @Override
  public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> out) {
    Rpc.unary(out, () -> GetPluginInfoResponse.newBuilder()
        .setName(pluginName)
        .setVendorVersion(BuildInfo.version())
        .putManifest("driver", backend.driver())
        .build());
  }

  @Override
  public void getPluginCapabilities(
      GetPluginCapabilitiesRequest request, StreamObserver<GetPluginCapabilitiesResponse> out) {
    Rpc.unary(out, () -> GetPluginCapabilitiesResponse.newBuilder()
        .addCapabilities(service(PluginCapability.Service.Type.CONTROLLER_SERVICE))
        .addCapabilities(service(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS))
        .addCapabilities(PluginCapability.newBuilder().setVolumeExpansion(
            PluginCapability.VolumeExpansion.newBuilder()
                .setType(PluginCapability.VolumeExpansion.Type.ONLINE)))
        .build());
  }

  @Override
  public void probe(ProbeRequest request, StreamObserver<ProbeResponse> out) {
    Rpc.unary(out, () -> {
      Readiness r = backend.readiness();
      if (!r.ready()) {
        // The spec keeps ready=false for a healthy plugin still starting; one that cannot reach what it
        // needs answers an error (csi-spec-rules.md, Probe). Nomad counts either as unhealthy.
        throw CsiException.failedPrecondition("the plugin is not ready: " + r.detail());
      }
      return ProbeResponse.newBuilder().setReady(BoolValue.of(true)).build();
    });
  }

  private static PluginCapability service(PluginCapability.Service.Type type) {
    return PluginCapability.newBuilder()
        .setService(PluginCapability.Service.newBuilder().setType(type))
        .build();
  }
}

package dev.caravan.csi.dhv;

import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.support.PropertiesCodec;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * What the plugin keeps about one DHV volume, written before it touches storage (the intent) so a
 * delete after a crash at any point still finds everything: the create request as last asked for,
 * the backend volume it made (once known), in deferred mode the node that has it published, and the
 * last create call's intent.
 *
 * @param backendVolumeId empty until the backend has created the volume
 * @param publishedOn deferred mode: the node id holding the volume; empty while no node does
 * @param creation the intent of the last create call (empty in records written before it was kept)
 */
record DhvRecord(
    String volumeId, String name, String namespace, long capacityMin, long capacityMax,
    Map<String, String> parameters, Optional<String> backendVolumeId, Optional<String> publishedOn,
    Instant createdAt, Optional<Creation> creation) {
  /**
   * One create call's intent, written (synced) before it provisions anything, and the backend's
   * answer once it came. Only what this says the call itself made is ever undone after it fails: a
   * backend volume that existed before the call, or that the backend reports it found, may hold data.
   *
   * @param call the call's own random id: the undo acts only on its own intent
   * @param backendExisted whether the backend held a volume under the name before the call provisioned
   * @param made the backend's answer: whether its create made the volume; empty until it answered
   */
  record Creation(String call, boolean backendExisted, Optional<Boolean> made) {
    static Creation begun(String call, boolean backendExisted) {
      return new Creation(call, backendExisted, Optional.empty());
    }

    Creation answered(boolean made) {
      return new Creation(call, backendExisted, Optional.of(made));
    }
  }

  DhvRecord {
    parameters = Map.copyOf(parameters);
  }

  /** The backend's name for the volume: derived from the UUID, so every retry asks for the same one. */
  String backendName() {
    return "dhv-" + volumeId;
  }

  CapacityRange capacity() {
    return new CapacityRange(capacityMin, capacityMax);
  }

  DhvRecord withRequest(DhvRequest r) {
    return new DhvRecord(volumeId, r.volumeName().isEmpty() ? name : r.volumeName(),
        r.namespace().isEmpty() ? namespace : r.namespace(), r.capacityMin(), r.capacityMax(), r.parameters(),
        backendVolumeId, publishedOn, createdAt, creation);
  }

  DhvRecord withBackendVolumeId(String id) {
    return new DhvRecord(volumeId, name, namespace, capacityMin, capacityMax, parameters, Optional.of(id),
        publishedOn, createdAt, creation);
  }

  DhvRecord withPublishedOn(Optional<String> node) {
    return new DhvRecord(volumeId, name, namespace, capacityMin, capacityMax, parameters, backendVolumeId, node,
        createdAt, creation);
  }

  DhvRecord withCreation(Creation c) {
    return new DhvRecord(volumeId, name, namespace, capacityMin, capacityMax, parameters, backendVolumeId,
        publishedOn, createdAt, Optional.of(c));
  }

  static DhvRecord of(DhvRequest r) {
    return new DhvRecord(r.volumeId(), r.volumeName(), r.namespace(), r.capacityMin(), r.capacityMax(),
        r.parameters(), Optional.empty(), Optional.empty(), Instant.now(), Optional.empty());
  }

  byte[] encode() {
    Properties p = new Properties();
    p.setProperty("volumeId", volumeId);
    p.setProperty("name", name);
    p.setProperty("namespace", namespace);
    p.setProperty("capacityMin", Long.toString(capacityMin));
    p.setProperty("capacityMax", Long.toString(capacityMax));
    parameters.forEach((k, v) -> p.setProperty("parameter." + k, v));
    backendVolumeId.ifPresent(id -> p.setProperty("backendVolumeId", id));
    publishedOn.ifPresent(n -> p.setProperty("publishedOn", n));
    p.setProperty("createdAt", createdAt.toString());
    creation.ifPresent(c -> {
      p.setProperty("creation.call", c.call());
      p.setProperty("creation.backendExisted", Boolean.toString(c.backendExisted()));
      c.made().ifPresent(m -> p.setProperty("creation.made", Boolean.toString(m)));
    });
    return PropertiesCodec.encode(p, "caravan DHV volume");
  }

  static DhvRecord decode(byte[] bytes) {
    Properties p = PropertiesCodec.decode(bytes);
    Map<String, String> parameters = PropertiesCodec.withPrefix(p, "parameter.");
    return new DhvRecord(p.getProperty("volumeId"), p.getProperty("name", ""), p.getProperty("namespace", ""),
        Long.parseLong(p.getProperty("capacityMin", "0")), Long.parseLong(p.getProperty("capacityMax", "0")),
        parameters, Optional.ofNullable(p.getProperty("backendVolumeId")),
        Optional.ofNullable(p.getProperty("publishedOn")), Instant.parse(p.getProperty("createdAt")),
        Optional.ofNullable(p.getProperty("creation.call")).map(call -> new Creation(call,
            !"false".equals(p.getProperty("creation.backendExisted")), // unreadable: it existed, nothing undone
            Optional.ofNullable(p.getProperty("creation.made")).map(Boolean::parseBoolean))));
  }
}

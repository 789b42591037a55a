package dev.caravan.csi.dhv;

import dev.caravan.csi.backend.CapacityRange;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/**
 * What the plugin keeps about one DHV volume, written before it touches storage (the intent) so a
 * delete after a crash at any point still finds everything: the create request as last asked for,
 * the backend volume it made (once known), and in deferred mode the node that has it published.
 *
 * @param backendVolumeId empty until the backend has created the volume
 * @param publishedOn deferred mode: the node id holding the volume; empty while no node does
 */
record DhvRecord(
    String volumeId, String name, String namespace, long capacityMin, long capacityMax,
    Map<String, String> parameters, Optional<String> backendVolumeId, Optional<String> publishedOn,
    Instant createdAt) {
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
        backendVolumeId, publishedOn, createdAt);
  }

  DhvRecord withBackendVolumeId(String id) {
    return new DhvRecord(volumeId, name, namespace, capacityMin, capacityMax, parameters, Optional.of(id),
        publishedOn, createdAt);
  }

  DhvRecord withPublishedOn(Optional<String> node) {
    return new DhvRecord(volumeId, name, namespace, capacityMin, capacityMax, parameters, backendVolumeId, node,
        createdAt);
  }

  static DhvRecord of(DhvRequest r) {
    return new DhvRecord(r.volumeId(), r.volumeName(), r.namespace(), r.capacityMin(), r.capacityMax(),
        r.parameters(), Optional.empty(), Optional.empty(), Instant.now());
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
    StringWriter w = new StringWriter();
    try {
      p.store(w, "caravan DHV volume");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return w.toString().getBytes(StandardCharsets.UTF_8);
  }

  static DhvRecord decode(byte[] bytes) {
    Properties p = new Properties();
    try {
      p.load(new StringReader(new String(bytes, StandardCharsets.UTF_8)));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Map<String, String> parameters = new TreeMap<>();
    for (String key : p.stringPropertyNames()) {
      if (key.startsWith("parameter.")) {
        parameters.put(key.substring("parameter.".length()), p.getProperty(key));
      }
    }
    return new DhvRecord(p.getProperty("volumeId"), p.getProperty("name", ""), p.getProperty("namespace", ""),
        Long.parseLong(p.getProperty("capacityMin", "0")), Long.parseLong(p.getProperty("capacityMax", "0")),
        parameters, Optional.ofNullable(p.getProperty("backendVolumeId")),
        Optional.ofNullable(p.getProperty("publishedOn")), Instant.parse(p.getProperty("createdAt")));
  }
}

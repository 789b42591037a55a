package dev.caravan.csi.backend.file;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.ContentSource;
import dev.caravan.csi.support.PropertiesCodec;
import dev.caravan.storage.crypt.Luks2;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/** The metadata records of the file backend and their properties-file encoding. */
final class Records {
  private Records() {}

  /** Lifecycle of a record; see {@link FileController} for the crash-safety rule built on it. */
  enum State {
    CREATING,
    READY,
    DELETING
  }

  /**
   * A volume's record. {@code access} is the access types CreateVolume was asked for, as a volume
   * context value ({@link AccessType#contextValue}); empty in records written before it was kept.
   * {@code encrypted}: CreateVolume asked for {@code encryption=on}, so the image holds LUKS2 (the
   * record says that it is encrypted, never with what).
   */
  record VolumeRecord(
      String id, String name, State state, long sizeBytes, Optional<ContentSource> source, String fsType,
      String access, Instant createdAt, boolean encrypted) {
    VolumeRecord withState(State s) {
      return new VolumeRecord(id, name, s, sizeBytes, source, fsType, access, createdAt, encrypted);
    }

    /**
     * The image file's size: the volume's, and for an encrypted volume the LUKS2 header before it, so
     * that the mapping (what the filesystem lives on) is as large as the volume's capacity.
     */
    long imageBytes() {
      return sizeBytes + (encrypted ? Luks2.HEADER_BYTES : 0);
    }

    VolumeRecord withSize(long size) {
      return new VolumeRecord(id, name, state, size, source, fsType, access, createdAt, encrypted);
    }

    byte[] encode() {
      Map<String, String> m = new TreeMap<>();
      m.put("kind", "volume");
      m.put("id", id);
      m.put("name", name);
      m.put("state", state.name());
      m.put("sizeBytes", Long.toString(sizeBytes));
      m.put("fsType", fsType);
      if (!access.isEmpty()) {
        m.put("access", access);
      }
      m.put("createdAt", createdAt.toString());
      if (encrypted) {
        m.put("encryption", "on");
      }
      source.ifPresent(s -> {
        m.put("source.kind", s.kind().name());
        m.put("source.id", s.id());
      });
      return Records.encode(m);
    }

    static VolumeRecord decode(byte[] bytes) {
      Properties p = PropertiesCodec.decode(bytes);
      Optional<ContentSource> source =
          p.getProperty("source.kind") == null
              ? Optional.empty()
              : Optional.of(new ContentSource(
                  ContentSource.Kind.valueOf(p.getProperty("source.kind")), p.getProperty("source.id")));
      return new VolumeRecord(
          p.getProperty("id"),
          p.getProperty("name"),
          State.valueOf(p.getProperty("state")),
          Long.parseLong(p.getProperty("sizeBytes")),
          source,
          p.getProperty("fsType", "ext4"),
          p.getProperty("access", ""),
          Instant.parse(p.getProperty("createdAt")),
          "on".equals(p.getProperty("encryption")));
    }
  }

  /**
   * A snapshot's record. {@code encrypted}: its source volume was, so its image holds that volume's
   * LUKS2 header, and every volume made from it is encrypted under the same passphrase.
   */
  record SnapshotRecord(
      String id, String name, State state, String sourceVolumeId, long sizeBytes, Instant createdAt,
      boolean encrypted) {
    SnapshotRecord withState(State s) {
      return new SnapshotRecord(id, name, s, sourceVolumeId, sizeBytes, createdAt, encrypted);
    }

    byte[] encode() {
      Map<String, String> m = new TreeMap<>();
      m.put("kind", "snapshot");
      m.put("id", id);
      m.put("name", name);
      m.put("state", state.name());
      m.put("sourceVolumeId", sourceVolumeId);
      m.put("sizeBytes", Long.toString(sizeBytes));
      m.put("createdAt", createdAt.toString());
      if (encrypted) {
        m.put("encryption", "on");
      }
      return Records.encode(m);
    }

    static SnapshotRecord decode(byte[] bytes) {
      Properties p = PropertiesCodec.decode(bytes);
      return new SnapshotRecord(
          p.getProperty("id"),
          p.getProperty("name"),
          State.valueOf(p.getProperty("state")),
          p.getProperty("sourceVolumeId"),
          Long.parseLong(p.getProperty("sizeBytes")),
          Instant.parse(p.getProperty("createdAt")),
          "on".equals(p.getProperty("encryption")));
    }
  }

  static byte[] encode(Map<String, String> values) {
    Properties p = new Properties();
    p.putAll(values);
    return PropertiesCodec.encode(p, "caravan file backend record");
  }
}

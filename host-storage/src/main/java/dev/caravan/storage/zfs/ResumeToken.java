package dev.caravan.storage.zfs;

import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * Where a resumable receive stopped, as ZFS writes it in the target's {@code receive_resume_token}
 * property: which snapshot was being sent (by name and GUID), from which base, how far the stream
 * got (object and offset), and the send flags the rest must be sent with. The receiving side reads
 * it ({@link ZfsStreams#resumeToken}), hands {@link #text()} to the sending side, which parses it
 * and sends the rest ({@link ZfsStreams#resume}).
 *
 * <p>The text is {@code 1-<checksum>-<size>-<payload>}: a version (1), the first word of the
 * fletcher-4 checksum of the compressed payload and the payload's uncompressed size, both in hex,
 * and the payload in hex: a packed nvlist, zlib-compressed. It is parsed here in Java, checked
 * before anything is believed, since it may arrive from another node.
 */
public final class ResumeToken {
  /** The largest uncompressed payload accepted: a real one is a few hundred bytes. */
  private static final int MAX_PACKED = 1 << 20;

  private final String text;
  private final String snapshot;
  private final long snapshotGuid;
  private final long fromGuid;
  private final long object;
  private final long offset;
  private final long bytes;
  private final boolean largeBlocks;
  private final boolean embeddedData;
  private final boolean compressed;
  private final boolean raw;
  private final boolean redacted;

  private ResumeToken(String text, Map<String, Object> fields) {
    this.text = text;
    this.snapshot = string(fields, "toname");
    this.snapshotGuid = number(fields, "toguid");
    this.fromGuid = fields.containsKey("fromguid") ? number(fields, "fromguid") : 0;
    this.object = number(fields, "object");
    this.offset = number(fields, "offset");
    this.bytes = number(fields, "bytes");
    this.largeBlocks = fields.containsKey("largeblockok");
    this.embeddedData = fields.containsKey("embedok");
    this.compressed = fields.containsKey("compressok");
    this.raw = fields.containsKey("rawok");
    this.redacted = fields.containsKey("redact_snaps") || fields.containsKey("book_redact_snaps");
    int at = snapshot.indexOf('@');
    if (at <= 0 || at == snapshot.length() - 1) {
      throw bad("its snapshot name " + snapshot + " is not dataset@name");
    }
  }

  /**
   * Parses and checks a token.
   *
   * @throws IllegalArgumentException saying what is wrong with it: the form, the version, the
   *     checksum, the compression, the packed list, or a missing field
   */
  public static ResumeToken parse(String text) {
    Objects.requireNonNull(text, "text");
    String[] parts = text.strip().split("-", -1);
    if (parts.length != 4 || parts[0].isEmpty() || parts[1].isEmpty() || parts[2].isEmpty()) {
      throw bad("it is not of the form 1-<checksum>-<size>-<payload>");
    }
    if (!parts[0].equals("1")) {
      throw bad("its version is " + clip(parts[0]) + "; only version 1 is known");
    }
    long checksum = hexNumber(parts[1], "checksum");
    long size = hexNumber(parts[2], "size");
    if (size <= 0 || size > MAX_PACKED) {
      throw bad("its payload size " + size + " is outside 1.." + MAX_PACKED);
    }
    String payload = parts[3];
    if (payload.isEmpty() || payload.length() % 2 != 0) {
      throw bad("its payload is not a whole number of hex bytes");
    }
    byte[] compressed;
    try {
      compressed = HexFormat.of().parseHex(payload);
    } catch (IllegalArgumentException e) {
      throw bad("its payload is not hex");
    }
    if (fletcher4FirstWord(compressed) != checksum) {
      throw bad("its checksum does not match its payload (damaged or cut short)");
    }
    byte[] packed = inflate(compressed, (int) size);
    Map<String, Object> fields;
    try {
      fields = PackedNvList.read(packed);
    } catch (IllegalArgumentException e) {
      throw bad("its payload is not a valid list: " + e.getMessage());
    }
    return new ResumeToken(text.strip(), fields);
  }

  /** The token as ZFS wrote it: what travels to the sending side. */
  public String text() {
    return text;
  }

  /** The snapshot the interrupted stream was sending, by the name it had on the sending side. */
  public String snapshot() {
    return snapshot;
  }

  /** That snapshot's GUID: the sending side checks it still has the same snapshot. */
  public long snapshotGuid() {
    return snapshotGuid;
  }

  /** The GUID of the incremental stream's base snapshot; empty for a full stream. */
  public OptionalLong fromGuid() {
    return fromGuid == 0 ? OptionalLong.empty() : OptionalLong.of(fromGuid);
  }

  /** The object the rest of the stream starts at. */
  public long object() {
    return object;
  }

  /** The byte offset in that object the rest of the stream starts at. */
  public long offset() {
    return offset;
  }

  /** How many bytes of the stream the receive had taken. */
  public long bytesReceived() {
    return bytes;
  }

  /** The stream was sent with large blocks ({@code LZC_SEND_FLAG_LARGE_BLOCK}). */
  public boolean largeBlocks() {
    return largeBlocks;
  }

  /** The stream was sent with embedded data ({@code LZC_SEND_FLAG_EMBED_DATA}). */
  public boolean embeddedData() {
    return embeddedData;
  }

  /** The stream was sent with blocks compressed as stored ({@code LZC_SEND_FLAG_COMPRESS}). */
  public boolean compressed() {
    return compressed;
  }

  /** The stream was sent raw ({@code LZC_SEND_FLAG_RAW}): an encrypted dataset's blocks as stored. */
  public boolean raw() {
    return raw;
  }

  /** The stream was a redacted send, which this library does not make or resume. */
  public boolean redacted() {
    return redacted;
  }

  /** Names, GUIDs and position, without the payload. */
  @Override
  public String toString() {
    return "resume of "
        + snapshot
        + (fromGuid == 0 ? " (full)" : " from guid " + Long.toUnsignedString(fromGuid))
        + " at object "
        + Long.toUnsignedString(object)
        + " offset "
        + Long.toUnsignedString(offset)
        + " after "
        + Long.toUnsignedString(bytes)
        + " bytes";
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof ResumeToken token && token.text.equals(text);
  }

  @Override
  public int hashCode() {
    return text.hashCode();
  }

  /**
   * The first word of fletcher-4 over the data as 32-bit words in the order the kernel wrote them
   * (little-endian on the machines Caravan runs on): the plain sum of the words, modulo 2^64. A
   * tail shorter than a word is not summed, as in ZFS.
   */
  static long fletcher4FirstWord(byte[] data) {
    long sum = 0;
    for (int i = 0; i + 4 <= data.length; i += 4) {
      sum +=
          (data[i] & 0xffL)
              | (data[i + 1] & 0xffL) << 8
              | (data[i + 2] & 0xffL) << 16
              | (data[i + 3] & 0xffL) << 24;
    }
    return sum;
  }

  private static byte[] inflate(byte[] compressed, int size) {
    Inflater inflater = new Inflater();
    try {
      inflater.setInput(compressed);
      byte[] packed = new byte[size];
      int length = 0;
      while (length < size && !inflater.finished() && !inflater.needsInput()) {
        length += inflater.inflate(packed, length, size - length);
        if (inflater.needsDictionary()) {
          throw bad("its payload does not decompress (a preset dictionary is asked for)");
        }
      }
      if (!inflater.finished()) {
        throw bad(
            length < size || inflater.needsInput()
                ? "its payload does not decompress to " + size + " bytes (cut short?)"
                : "its payload decompresses to more than its size " + size);
      }
      if (length != size) {
        throw bad("its payload decompresses to " + length + " bytes, not its size " + size);
      }
      return packed;
    } catch (DataFormatException e) {
      throw bad("its payload does not decompress (not zlib data)");
    } finally {
      inflater.end();
    }
  }

  private static long hexNumber(String hex, String what) {
    if (hex.length() > 16 || !hex.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
      throw bad("its " + what + " " + clip(hex) + " is not a hex number of at most 64 bits");
    }
    return Long.parseUnsignedLong(hex, 16);
  }

  private static String string(Map<String, Object> fields, String name) {
    if (fields.get(name) instanceof String value) {
      return value;
    }
    throw bad("it has no " + name);
  }

  private static long number(Map<String, Object> fields, String name) {
    if (fields.get(name) instanceof Long value) {
      return value;
    }
    throw bad("it has no " + name);
  }

  private static String clip(String text) {
    return text.length() <= 20 ? text : text.substring(0, 20) + "...";
  }

  private static IllegalArgumentException bad(String why) {
    return new IllegalArgumentException("not a usable receive resume token: " + why);
  }
}

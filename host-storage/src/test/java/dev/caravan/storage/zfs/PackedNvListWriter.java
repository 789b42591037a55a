package dev.caravan.storage.zfs;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.zip.Deflater;

/**
 * Writes nvlists in libnvpair's native little-endian encoding and wraps them into resume tokens,
 * for the tests of {@link PackedNvList} and {@link ResumeToken}: well-formed ones (checked against
 * libnvpair's own packing in {@code PackedNvListTest}) and deliberately broken ones.
 */
final class PackedNvListWriter {
  static final int BOOLEAN = 1;
  static final int UINT64 = 8;
  static final int STRING = 9;
  static final int UINT64_ARRAY = 16;
  static final int NVLIST = 19;

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();

  PackedNvListWriter() {
    out.writeBytes(new byte[] {0, 1, 0, 0}); // native encoding, little-endian
    out.writeBytes(le(ByteBuffer.allocate(8)).putInt(0).putInt(1).array()); // version, NV_UNIQUE_NAME
  }

  PackedNvListWriter flag(String name) {
    return pair(name, BOOLEAN, 0, new byte[0]);
  }

  PackedNvListWriter uint64(String name, long value) {
    return pair(name, UINT64, 1, le(ByteBuffer.allocate(8)).putLong(value).array());
  }

  PackedNvListWriter string(String name, String value) {
    byte[] text = value.getBytes(StandardCharsets.UTF_8);
    byte[] withNul = new byte[text.length + 1];
    System.arraycopy(text, 0, withNul, 0, text.length);
    return pair(name, STRING, 1, withNul);
  }

  PackedNvListWriter uint64Array(String name, long... values) {
    ByteBuffer buffer = le(ByteBuffer.allocate(8 * values.length));
    for (long value : values) {
      buffer.putLong(value);
    }
    return pair(name, UINT64_ARRAY, values.length, buffer.array());
  }

  /** A pair of any type and element count with {@code value} as its raw bytes. */
  PackedNvListWriter pair(String name, int type, int elements, byte[] value) {
    byte[] nameBytes = (name + "\0").getBytes(StandardCharsets.UTF_8);
    int valueAt = align8(16 + nameBytes.length);
    int size = align8(valueAt + value.length);
    ByteBuffer pair = le(ByteBuffer.allocate(size));
    pair.putInt(size).putShort((short) nameBytes.length).putShort((short) 0).putInt(elements).putInt(type);
    pair.put(nameBytes);
    pair.position(valueAt);
    pair.put(value);
    out.writeBytes(pair.array());
    return this;
  }

  /** The packed list, with its end marker. */
  byte[] bytes() {
    ByteArrayOutputStream copy = new ByteArrayOutputStream();
    copy.writeBytes(out.toByteArray());
    copy.writeBytes(new byte[4]);
    return copy.toByteArray();
  }

  /** A resume token around these pairs, as the kernel writes one. */
  String token() {
    return token(bytes());
  }

  /** {@code 1-<checksum>-<size>-<zlib payload>} around {@code packed}. */
  static String token(byte[] packed) {
    return token(packed.length, deflate(packed));
  }

  /** A token with the given declared size and compressed payload, its checksum made to match. */
  static String token(long declaredSize, byte[] compressed) {
    return "1-"
        + Long.toHexString(ResumeToken.fletcher4FirstWord(compressed))
        + "-"
        + Long.toHexString(declaredSize)
        + "-"
        + HexFormat.of().formatHex(compressed);
  }

  static byte[] deflate(byte[] data) {
    Deflater deflater = new Deflater(6);
    try {
      deflater.setInput(data);
      deflater.finish();
      ByteArrayOutputStream compressed = new ByteArrayOutputStream();
      byte[] chunk = new byte[4096];
      while (!deflater.finished()) {
        compressed.write(chunk, 0, deflater.deflate(chunk));
      }
      return compressed.toByteArray();
    } finally {
      deflater.end();
    }
  }

  private static ByteBuffer le(ByteBuffer buffer) {
    return buffer.order(ByteOrder.LITTLE_ENDIAN);
  }

  private static int align8(int n) {
    return (n + 7) & ~7;
  }
}

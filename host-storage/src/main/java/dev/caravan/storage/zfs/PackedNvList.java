package dev.caravan.storage.zfs;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads an nvlist packed in libnvpair's native encoding (what the kernel packs, e.g. into a
 * receive resume token) in plain Java: the bytes may come from another node, so they are checked
 * here, with no native code reading them. Flat lists of the scalar types only; a nested list is
 * refused. Values take {@code NvList}'s Java shapes: integers as {@link Long}, a bare boolean flag
 * as {@link Boolean#TRUE}, {@code boolean_value} as {@link Boolean}, strings as {@link String},
 * uint64 arrays as {@code long[]}.
 *
 * <p>The layout ({@code nvpair.c}): a 4-byte header (encoding 0 = native, endianness 1 = little);
 * the list's version and flags (two int32); then each pair as it lies in memory, an {@code
 * nvpair_t} (int32 size of the whole pair, int16 name size with its NUL, int16 reserved, int32
 * element count, int32 type) followed by the name, the value 8-byte aligned after it; the list ends
 * with an int32 0.
 */
final class PackedNvList {
  private static final int ENCODE_NATIVE = 0;
  private static final int HEADER = 4;
  private static final int PAIR_HEADER = 16;

  // data_type_t (sys/nvpair.h): stable values of the on-disk and ioctl format.
  private static final int BOOLEAN = 1;
  private static final int INT32 = 5;
  private static final int UINT32 = 6;
  private static final int INT64 = 7;
  private static final int UINT64 = 8;
  private static final int STRING = 9;
  private static final int UINT64_ARRAY = 16;
  private static final int BOOLEAN_VALUE = 21;

  private PackedNvList() {}

  /**
   * The pairs of {@code packed}, in order.
   *
   * @throws IllegalArgumentException naming what is wrong, for anything that is not a well-formed
   *     flat native nvlist of those types
   */
  static Map<String, Object> read(byte[] packed) {
    if (packed.length < HEADER + 8 + 4) {
      throw new IllegalArgumentException("packed nvlist of " + packed.length + " bytes is too short");
    }
    if (packed[0] != ENCODE_NATIVE) {
      throw new IllegalArgumentException(
          "packed nvlist encoding " + packed[0] + " is not the native encoding (0)");
    }
    ByteOrder order =
        switch (packed[1]) {
          case 1 -> ByteOrder.LITTLE_ENDIAN;
          case 0 -> ByteOrder.BIG_ENDIAN;
          default ->
              throw new IllegalArgumentException("packed nvlist endianness " + packed[1] + " is unknown");
        };
    ByteBuffer in = ByteBuffer.wrap(packed).order(order);
    in.position(HEADER + 8); // version and flags: nothing to check for a flat list
    Map<String, Object> pairs = new LinkedHashMap<>();
    try {
      while (true) {
        int start = in.position();
        int size = in.getInt();
        if (size == 0) {
          if (in.hasRemaining()) {
            throw new IllegalArgumentException(
                "packed nvlist has " + in.remaining() + " bytes after its end");
          }
          return Collections.unmodifiableMap(pairs);
        }
        if (size < PAIR_HEADER || size % 8 != 0 || size > packed.length - start) {
          throw new IllegalArgumentException("packed nvlist pair at byte " + start + " has size " + size);
        }
        int nameSize = in.getShort();
        in.getShort();
        int elements = in.getInt();
        int type = in.getInt();
        if (nameSize < 2 || PAIR_HEADER + nameSize > size || packed[start + PAIR_HEADER + nameSize - 1] != 0) {
          throw new IllegalArgumentException("packed nvlist pair at byte " + start + " has a bad name");
        }
        String name =
            new String(packed, start + PAIR_HEADER, nameSize - 1, StandardCharsets.UTF_8);
        int valueAt = start + align8(PAIR_HEADER + nameSize);
        ByteBuffer value = in.duplicate().order(order).position(valueAt).limit(start + size);
        if (pairs.put(name, value(name, type, elements, value)) != null) {
          throw new IllegalArgumentException("packed nvlist repeats the name " + name);
        }
        in.position(start + size);
      }
    } catch (BufferUnderflowException | IndexOutOfBoundsException e) {
      throw new IllegalArgumentException("packed nvlist is truncated", e);
    }
  }

  private static Object value(String name, int type, int elements, ByteBuffer value) {
    return switch (type) {
      case BOOLEAN -> {
        requireElements(name, elements, 0);
        yield true;
      }
      case BOOLEAN_VALUE -> {
        requireElements(name, elements, 1);
        yield value.getInt() != 0;
      }
      case INT32 -> {
        requireElements(name, elements, 1);
        yield (long) value.getInt();
      }
      case UINT32 -> {
        requireElements(name, elements, 1);
        yield Integer.toUnsignedLong(value.getInt());
      }
      case INT64, UINT64 -> {
        requireElements(name, elements, 1);
        yield value.getLong();
      }
      case STRING -> {
        requireElements(name, elements, 1);
        int from = value.position();
        int end = from;
        while (end < value.limit() && value.get(end) != 0) {
          end++;
        }
        if (end == value.limit()) {
          throw new IllegalArgumentException("packed nvlist string " + name + " is not terminated");
        }
        byte[] text = new byte[end - from];
        value.get(from, text);
        yield new String(text, StandardCharsets.UTF_8);
      }
      case UINT64_ARRAY -> {
        if (elements < 0 || elements > value.remaining() / 8) {
          throw new IllegalArgumentException(
              "packed nvlist array " + name + " claims " + elements + " elements");
        }
        long[] array = new long[elements];
        for (int i = 0; i < elements; i++) {
          array[i] = value.getLong();
        }
        yield array;
      }
      default ->
          throw new IllegalArgumentException(
              "packed nvlist pair " + name + " has type " + type + ", which is not read here");
    };
  }

  private static void requireElements(String name, int elements, int expected) {
    if (elements != expected) {
      throw new IllegalArgumentException(
          "packed nvlist pair " + name + " has " + elements + " elements, not " + expected);
    }
  }

  private static int align8(int n) {
    return (n + 7) & ~7;
  }
}

package dev.caravan.storage.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Hand-made on-disk signatures, the few bytes libblkid recognises, without the tools. */
public final class Signatures {
  private Signatures() {}

  /** An MBR with one Linux partition from sector 2048 to the end of the first 8 MiB. */
  public static void writeMbr(Path image) {
    ByteBuffer sector = ByteBuffer.allocate(512).order(ByteOrder.LITTLE_ENDIAN);
    sector.putInt(440, 0x2a2a2a2a); // disk identifier
    sector.put(446 + 4, (byte) 0x83); // partition type: Linux
    sector.putInt(446 + 8, 2048); // first sector
    sector.putInt(446 + 12, 16384 - 2048); // sector count
    sector.put(510, (byte) 0x55).put(511, (byte) 0xaa);
    write(image, 0, sector);
  }

  /**
   * An LVM2 physical volume label in sector 1: "LABELONE", its own sector number, a CRC of the rest
   * of the sector, and the "LVM2 001" type with a PV UUID.
   */
  public static void writeLvm2Label(Path image) {
    ByteBuffer label = ByteBuffer.allocate(512).order(ByteOrder.LITTLE_ENDIAN);
    label.put(0, "LABELONE".getBytes(StandardCharsets.US_ASCII));
    label.putLong(8, 1); // sector_xl
    label.putInt(20, 32); // offset_xl: where the PV header starts
    label.put(24, "LVM2 001".getBytes(StandardCharsets.US_ASCII));
    label.put(32, "Cara0van0Test0PV0uuid0000000000A".getBytes(StandardCharsets.US_ASCII));
    label.putLong(64, 8L << 20); // device size
    label.putInt(16, lvm2Crc(label.array(), 20, 512));
    write(image, 512, label);
  }

  /** A LUKS1 header: magic and version are what identify it. */
  public static void writeLuks1(Path image) {
    ByteBuffer header = ByteBuffer.allocate(592).order(ByteOrder.BIG_ENDIAN);
    header.put(0, new byte[] {'L', 'U', 'K', 'S', (byte) 0xba, (byte) 0xbe});
    header.putShort(6, (short) 1);
    header.put(8, "aes".getBytes(StandardCharsets.US_ASCII));
    header.put(40, "xts-plain64".getBytes(StandardCharsets.US_ASCII));
    header.put(72, "sha256".getBytes(StandardCharsets.US_ASCII));
    write(image, 0, header);
  }

  /**
   * Copies the first {@code length} bytes of {@code source} over the start of {@code target}: with
   * a source that a mkfs tool formatted, a real superblock, written the way any program could.
   */
  public static void copyHead(Path source, Path target, int length) {
    ByteBuffer head = ByteBuffer.allocate(length);
    try (FileChannel channel = FileChannel.open(source, StandardOpenOption.READ)) {
      while (head.hasRemaining() && channel.read(head, head.position()) > 0) {
        // reading on
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    write(target, 0, head);
  }

  // LVM2's CRC-32: the reflected 0xEDB88320 polynomial, a nibble at a time, seeded 0xf597a6cf.
  private static int lvm2Crc(byte[] data, int from, int to) {
    int crc = 0xf597a6cf;
    for (int i = from; i < to; i++) {
      crc ^= data[i] & 0xff;
      for (int bit = 0; bit < 8; bit++) {
        crc = (crc >>> 1) ^ ((crc & 1) != 0 ? 0xedb88320 : 0);
      }
    }
    return crc;
  }

  private static void write(Path image, long offset, ByteBuffer bytes) {
    try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
      bytes.rewind();
      while (bytes.hasRemaining()) {
        channel.write(bytes, offset + bytes.position());
      }
      channel.force(true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

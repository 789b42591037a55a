package dev.caravan.storage.block;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

class WwidTest {
  // Designator header: code set, (PIV|association|type), reserved, length (SPC-4 7.8.6).
  private static byte[] designator(int codeSet, int association, int type, byte[] value) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(codeSet);
    out.write((association << 4) | type);
    out.write(0);
    out.write(value.length);
    out.writeBytes(value);
    return out.toByteArray();
  }

  private static byte[] page(byte[]... designators) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    for (byte[] d : designators) {
      body.writeBytes(d);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(0); // peripheral qualifier and device type: a disk
    out.write(0x83);
    out.write(body.size() >> 8);
    out.write(body.size() & 0xff);
    out.writeBytes(body.toByteArray());
    return out.toByteArray();
  }

  private static byte[] hex(String hex) {
    return HexFormat.of().parseHex(hex);
  }

  @Test
  void anNaaDesignatorOfTheLogicalUnitGivesThreeAndItsHex() {
    // What LIO answers for a fileio LUN: NAA 6 (IEEE Registered Extended), a T10 vendor id, and
    // port-level designators (association 1), which do not name the LUN.
    byte[] lio =
        page(
            designator(1, 0, 3, hex("6001405aabbccdd1000000000000000a")),
            designator(2, 0, 1, "LIO-ORG vol1    aabbccdd1".getBytes(StandardCharsets.US_ASCII)),
            designator(1, 1, 4, hex("00000001")),
            designator(1, 1, 5, hex("00000000")));

    assertThat(Wwid.fromVpdPage83(lio)).contains(Wwid.of("36001405aabbccdd1000000000000000a"));
  }

  @Test
  void theHigherNaaTypeWinsAndEui64IsTheFallback() {
    byte[] naa3 = designator(1, 0, 3, hex("3000000000000001"));
    byte[] naa5 = designator(1, 0, 3, hex("5000000000000002"));
    byte[] eui = designator(1, 0, 2, hex("0011223344556677"));

    assertThat(Wwid.fromVpdPage83(page(naa3, eui, naa5))).contains(Wwid.of("35000000000000002"));
    assertThat(Wwid.fromVpdPage83(page(eui))).contains(Wwid.of("20011223344556677"));
  }

  @Test
  void aPageThatNamesTheUnitByNothingUniqueHasNoWwid() {
    byte[] vendorOnly = page(designator(2, 0, 1, "LIO-ORG vol1".getBytes(StandardCharsets.US_ASCII)));
    byte[] portOnly = page(designator(1, 1, 3, hex("6001405aabbccdd1000000000000000a")));

    assertThat(Wwid.fromVpdPage83(vendorOnly)).isEmpty();
    assertThat(Wwid.fromVpdPage83(portOnly)).isEmpty();
    assertThat(Wwid.fromVpdPage83(new byte[] {0, (byte) 0x80, 0, 0})).isEmpty();
    assertThat(Wwid.fromVpdPage83(new byte[0])).isEmpty();
  }

  @Test
  void aTruncatedDesignatorIsIgnoredNotReadPastTheEnd() {
    byte[] whole = page(designator(1, 0, 3, hex("6001405aabbccdd1000000000000000a")));
    byte[] cut = java.util.Arrays.copyOf(whole, whole.length - 4);

    assertThat(Wwid.fromVpdPage83(cut)).isEmpty();
  }

  @Test
  void aWwidIsOneTokenWithoutSlashesOrBlanks() {
    assertThat(Wwid.of("36001405aabbccdd1000000000000000a").toString())
        .isEqualTo("36001405aabbccdd1000000000000000a");
    assertThatThrownBy(() -> Wwid.of("3600/../etc")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Wwid.of("36 00")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Wwid.of("")).isInstanceOf(IllegalArgumentException.class);
  }
}

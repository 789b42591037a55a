package dev.caravan.storage.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** Resume tokens parsed in Java: one the kernel wrote, ones made here, and broken ones refused. */
class ResumeTokenTest {
  /**
   * The {@code receive_resume_token} OpenZFS 2.3.2 left on a target after a full stream of a 32 MiB
   * volume with 8 MiB of data was cut after 2 MiB ({@code ZfsStreamsGuestTest} prints the one of
   * each run).
   */
  static final String FROM_THE_KERNEL =
      "1-119b7c2f50-110-789c636064000310a500c4ec50360710e72765a5269740f80cd8e4d3d28a534b4032f270"
          + "793624f9a4ca92d462207de2963c56fd25f9e9a599290c0cccbb8eaffcf3f347bf07923c27583e2f313795"
          + "812139b128b12c314f17685a897e5589ae65765eae699e6e4a6a997e7269896e7151b2aea1b943b121d499"
          + "0c1250f361fe4acd4d4a4dc9cf06dbcf8d249e9c9f5b50945a5c0c94820300369a2a4e";

  @Test
  void readsATokenTheKernelWrote() {
    ResumeToken token = ResumeToken.parse(FROM_THE_KERNEL);
    assertThat(token.snapshot()).isEqualTo("caravan-test/zt-9knm5n-dev/cut-src-17@s1");
    assertThat(token.snapshotGuid()).isEqualTo(0x8ff8f9fca9c7ba03L);
    assertThat(token.fromGuid()).isEmpty();
    assertThat(token.object()).isEqualTo(1);
    assertThat(token.offset()).isEqualTo(0x1f0000);
    assertThat(token.bytesReceived()).isEqualTo(2087624);
    assertThat(token.embeddedData()).isTrue();
    assertThat(token.compressed()).isTrue();
    assertThat(token.largeBlocks()).isFalse();
    assertThat(token.raw()).isFalse();
    assertThat(token.redacted()).isFalse();
    assertThat(token.text()).isEqualTo(FROM_THE_KERNEL);
    assertThat(token.toString())
        .isEqualTo(
            "resume of caravan-test/zt-9knm5n-dev/cut-src-17@s1 (full) at object 1 offset 2031616"
                + " after 2087624 bytes");
    assertThat(ResumeToken.parse(" " + FROM_THE_KERNEL + "\n")).isEqualTo(token);
  }

  @Test
  void readsAnIncrementalRawTokenWithEveryFlag() {
    String text =
        new PackedNvListWriter()
            .uint64("fromguid", 0xfedcba9876543210L)
            .uint64("object", 130)
            .uint64("offset", 1L << 40)
            .uint64("bytes", 12345)
            .uint64("toguid", 42)
            .string("toname", "tank/vol@r2")
            .flag("largeblockok")
            .flag("embedok")
            .flag("compressok")
            .flag("rawok")
            .token();
    ResumeToken token = ResumeToken.parse(text);
    assertThat(token.fromGuid()).hasValue(0xfedcba9876543210L);
    assertThat(token.snapshot()).isEqualTo("tank/vol@r2");
    assertThat(token.snapshotGuid()).isEqualTo(42);
    assertThat(token.object()).isEqualTo(130);
    assertThat(token.offset()).isEqualTo(1L << 40);
    assertThat(token.bytesReceived()).isEqualTo(12345);
    assertThat(token.largeBlocks()).isTrue();
    assertThat(token.embeddedData()).isTrue();
    assertThat(token.compressed()).isTrue();
    assertThat(token.raw()).isTrue();
    assertThat(token.toString()).contains("from guid 18364758544493064720");
  }

  @Test
  void aRedactedStreamsTokenIsReadAndMarked() {
    String text = minimal().uint64Array("redact_snaps", 7, 8).token();
    assertThat(ResumeToken.parse(text).redacted()).isTrue();
  }

  @Test
  void refusesWhatIsNotAToken() {
    refused("", "it is not of the form 1-<checksum>-<size>-<payload>");
    refused("garbage", "it is not of the form 1-<checksum>-<size>-<payload>");
    refused("1-2-3", "it is not of the form");
    refused("1-2-3-4-5", "it is not of the form");
    refused("2-0-10-00", "its version is 2; only version 1 is known");
    refused("1-xyz-10-00", "its checksum xyz is not a hex number of at most 64 bits");
    refused("1-0-10000000000000000-00", "its size 10000000000000000 is not a hex number");
    refused("1-0-0-00", "its payload size 0 is outside 1..1048576");
    refused("1-0-200000-00", "its payload size 2097152 is outside 1..1048576");
    refused("1-0-10-", "its payload is not a whole number of hex bytes");
    refused("1-0-10-abc", "its payload is not a whole number of hex bytes");
    refused("1-0-10-zz", "its payload is not hex");
  }

  @Test
  void refusesADamagedOrCutPayload() {
    String good = minimal().token();
    int payloadAt = good.lastIndexOf('-') + 1;
    char flipped = good.charAt(payloadAt + 6) == '0' ? '1' : '0';
    String damaged = good.substring(0, payloadAt + 6) + flipped + good.substring(payloadAt + 7);
    refused(damaged, "its checksum does not match its payload");
    refused(good.substring(0, good.length() - 8), "its checksum does not match its payload");

    byte[] packed = minimal().bytes();
    byte[] compressed = PackedNvListWriter.deflate(packed);
    byte[] cut = java.util.Arrays.copyOf(compressed, compressed.length - 6);
    refused(PackedNvListWriter.token(packed.length, cut), "does not decompress to " + packed.length + " bytes");
    refused(PackedNvListWriter.token(packed.length + 8, compressed), "decompresses to " + packed.length + " bytes, not its size");
    refused(PackedNvListWriter.token(packed.length - 8, compressed), "decompresses to more than its size");
    refused(PackedNvListWriter.token(packed.length, HexFormat.of().parseHex("00112233445566778899")),
        "its payload does not decompress (not zlib data)");
  }

  @Test
  void refusesAListThatIsNotAResumeToken() {
    refused(PackedNvListWriter.token(new byte[] {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
        "its payload is not a valid list: packed nvlist encoding 1 is not the native encoding (0)");
    refused(
        new PackedNvListWriter().uint64("object", 1).uint64("offset", 0).uint64("bytes", 0).uint64("toguid", 1).token(),
        "it has no toname");
    refused(
        new PackedNvListWriter().string("toname", "tank/vol@s").uint64("offset", 0).uint64("bytes", 0).uint64("toguid", 1).token(),
        "it has no object");
    refused(
        new PackedNvListWriter().string("toname", "tank/vol").uint64("object", 1).uint64("offset", 0).uint64("bytes", 0)
            .uint64("toguid", 1).token(),
        "its snapshot name tank/vol is not dataset@name");
    refused(minimal().pair("nested", PackedNvListWriter.NVLIST, 1, new byte[24]).token(),
        "packed nvlist pair nested has type 19, which is not read here");
    refused(minimal().string("object", "1").token(), "packed nvlist repeats the name object");
  }

  private static PackedNvListWriter minimal() {
    return new PackedNvListWriter()
        .uint64("object", 1)
        .uint64("offset", 0)
        .uint64("bytes", 0)
        .uint64("toguid", 1)
        .string("toname", "tank/vol@s");
  }

  private static void refused(String text, String why) {
    assertThatThrownBy(() -> ResumeToken.parse(text))
        .as("token %s", text)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("not a usable receive resume token: ")
        .hasMessageContaining(why);
  }
}

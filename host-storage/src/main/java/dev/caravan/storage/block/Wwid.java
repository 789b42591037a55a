package dev.caravan.storage.block;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A SCSI logical unit's world-wide identifier, in the form udev's {@code scsi_id} and multipathd
 * use: a one-digit designator type followed by the identifier, such as {@code
 * 36001405a1b2c3d4e5f60718293a4b5c6} for an NAA designator. It names the same LUN on every path
 * and after every reconnect, which a {@code /dev/sdX} name does not.
 */
public record Wwid(String value) {
  private static final Pattern SHAPE = Pattern.compile("[0-9A-Za-z][0-9A-Za-z._:-]{1,254}");

  // VPD page 0x83 designator types (SPC-4 table 459), and the prefix scsi_id gives each.
  private static final int TYPE_EUI64 = 2;
  private static final int TYPE_NAA = 3;
  private static final int TYPE_SCSI_NAME = 8;
  private static final int ASSOCIATION_LOGICAL_UNIT = 0;

  public Wwid {
    Objects.requireNonNull(value, "value");
    if (!SHAPE.matcher(value).matches()) {
      throw new IllegalArgumentException(
          "a WWID is 2 to 255 letters, digits and . _ : - starting with a letter or digit: "
              + value);
    }
  }

  /** Parses a WWID as multipathd or {@code scsi_id} print it. */
  public static Wwid of(String value) {
    return new Wwid(value);
  }

  /**
   * The WWID in the Device Identification VPD page (0x83) as the kernel returns it (sysfs {@code
   * device/vpd_pg83}): the logical unit's NAA designator (the highest NAA type first), else its
   * EUI-64, else its SCSI name string. Empty when the page names the logical unit by none of
   * these: a T10 vendor id alone is not unique enough to tell LUNs apart safely.
   */
  public static Optional<Wwid> fromVpdPage83(byte[] page) {
    if (page.length < 4 || (page[1] & 0xff) != 0x83) {
      return Optional.empty();
    }
    int end = Math.min(page.length, 4 + (((page[2] & 0xff) << 8) | (page[3] & 0xff)));
    Optional<Wwid> best = Optional.empty();
    int bestRank = Integer.MAX_VALUE;
    for (int at = 4; at + 4 <= end; ) {
      int codeSet = page[at] & 0x0f;
      int association = (page[at + 1] >> 4) & 0x03;
      int type = page[at + 1] & 0x0f;
      int length = page[at + 3] & 0xff;
      int from = at + 4;
      at = from + length;
      if (at > end || association != ASSOCIATION_LOGICAL_UNIT || length == 0) {
        continue;
      }
      int rank;
      String value;
      switch (type) {
        case TYPE_NAA -> {
          int naa = (page[from] >> 4) & 0x0f;
          // IEEE Registered Extended (6), Registered (5), Extended (2), Locally assigned (3).
          rank =
              switch (naa) {
                case 6 -> 0;
                case 5 -> 1;
                case 2 -> 2;
                default -> 3;
              };
          value = "3" + HexFormat.of().formatHex(page, from, at);
        }
        case TYPE_EUI64 -> {
          rank = 4;
          value = "2" + HexFormat.of().formatHex(page, from, at);
        }
        case TYPE_SCSI_NAME -> {
          if (codeSet != 3) { // UTF-8 only
            continue;
          }
          rank = 5;
          value = "8" + new String(page, from, length, StandardCharsets.UTF_8).replace("\0", "").strip();
        }
        default -> { // a T10 vendor id (type 1) among them: not unique enough
          continue;
        }
      }
      if (rank < bestRank && SHAPE.matcher(value).matches()) {
        best = Optional.of(new Wwid(value));
        bestRank = rank;
      }
    }
    return best;
  }

  @Override
  public String toString() {
    return value;
  }
}

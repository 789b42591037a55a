package dev.caravan.csi.scenario.fuzz;

import dev.caravan.csi.scenario.Caps;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.caravan.csi.v1.VolumeCapability;
import io.grpc.Status.Code;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * One bad request in the making: picks which of its fields are wrong (at least one, usually one) and
 * how, and records each wrong field as a {@link Defect} with the outcomes csi-spec-rules.md allows for
 * it. Values the spec itself rules out (a missing required field, an empty or NUL-bearing or
 * over-long id, a relative path, a forbidden character in a name, an undecodable page token) allow
 * exactly the code the spec names; the rest allow any non-OK code documented for the RPC, and OK
 * only where the spec says so (deleting or unstaging what is not there).
 */
final class FuzzDraw {
  /** A wrong field: the codes it may draw, and whether OK is a right answer to it alone. */
  record Defect(String field, String kind, Set<Code> codes, boolean permitsOk) {
    @Override
    public String toString() {
      return field + ": " + kind;
    }
  }

  /** What a capability is checked against: nothing yet, a created volume, or a volume staged as its capability says. */
  enum Against { NOTHING, CREATED, STAGED }

  /** How a path field is used, which decides what a foreign path means. */
  enum PathUse { STAGE, UNSTAGE, PUBLISH_STAGING, PUBLISH_TARGET, UNPUBLISH, VOLUME_PATH }

  private static final int MAX_ID = 128;
  static final String ANOTHER_FILESYSTEM = "another filesystem than the volume's";

  /**
   * Which requests whose right answer main does not give yet to send anyway (rules being changed as
   * this is written; the reasons are where {@link #pending} is called). None by default, so that the
   * suite passes on main; {@code -Dcaravan.fuzz.pending=true} sends them all, any other value those
   * whose reason contains it (e.g. {@code -Dcaravan.fuzz.pending=NodeExpand}).
   */
  private static final String SEND_PENDING = System.getProperty("caravan.fuzz.pending", "");

  /** Whether a request held back for {@code reason} is to be sent in this run. */
  static boolean sendPending(String reason) {
    return SEND_PENDING.equals("true") || (!SEND_PENDING.isEmpty() && reason.contains(SEND_PENDING));
  }

  final SplittableRandom random;
  final FuzzRpc rpc;
  final FuzzWorld world;
  final List<Defect> defects = new ArrayList<>();
  /** Why this request is held back (its right answer is a rule main does not follow yet), or null. */
  String pending;
  private final Set<Integer> badFields = new java.util.TreeSet<>();

  FuzzDraw(SplittableRandom random, FuzzRpc rpc, FuzzWorld world, int fields) {
    this.random = random;
    this.rpc = rpc;
    this.world = world;
    badFields.add(random.nextInt(fields));
    // usually one wrong field, sometimes several: which code wins is then the plugin's choice
    while (random.nextInt(4) == 0) {
      badFields.add(random.nextInt(fields));
    }
  }

  /** Whether field {@code i} of this request is to be wrong. */
  boolean bad(int i) {
    return badFields.contains(i);
  }

  boolean chance(int percent) {
    return random.nextInt(100) < percent;
  }

  @SafeVarargs
  final <T> T pick(T... options) {
    return options[random.nextInt(options.length)];
  }

  <T> T pick(List<T> options) {
    return options.get(random.nextInt(options.size()));
  }

  String hex12() {
    byte[] b = new byte[6];
    random.nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  // ---- recording defects -------------------------------------------------------------------------

  /** Marks this request as one whose right answer is still pending in main (see {@link #sendPending}). */
  void pending(String why) {
    if (pending == null) {
      pending = why;
    }
  }

  /** A defect the spec gives exactly these codes. */
  void fixed(String field, String kind, Code... codes) {
    defects.add(new Defect(field, kind, EnumSet.of(codes[0], codes), false));
  }

  /** A defect any documented non-OK code of the RPC answers. */
  void invalid(String field, String kind) {
    defects.add(new Defect(field, kind, rpc.documented(), false));
  }

  /** Something that does not exist: documented non-OK, or OK where the RPC has nothing to undo. */
  void absent(String field, String kind) {
    defects.add(new Defect(field, kind, rpc.documented(), rpc.okWhenAbsent));
  }

  /** Unsupported where the RPC answers OK with a negative result (Validate, GetCapacity, list filters). */
  void answeredInBand(String field, String kind) {
    defects.add(new Defect(field, kind, rpc.documented(), true));
  }

  /** Records a defect for an id-like string by what the spec says about its shape. */
  private String classifyId(String field, String value, String kind) {
    if (value.isEmpty()) {
      fixed(field, "empty", Code.INVALID_ARGUMENT);
    } else if (value.indexOf('\0') >= 0) {
      fixed(field, "NUL in " + kind, Code.INVALID_ARGUMENT);
    } else if (value.getBytes(StandardCharsets.UTF_8).length > MAX_ID) {
      fixed(field, "over 128 bytes (" + value.getBytes(StandardCharsets.UTF_8).length + ")", Code.INVALID_ARGUMENT);
    } else {
      absent(field, kind + " '" + printable(value) + "'");
    }
    return value;
  }

  static String printable(String s) {
    StringBuilder out = new StringBuilder();
    String v = s.length() > 80 ? s.substring(0, 80) + "...(" + s.length() + " chars)" : s;
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      out.append(Character.isISOControl(c) || Character.getType(c) == Character.FORMAT ? String.format("\\u%04x", (int) c) : c);
    }
    return out.toString();
  }

  // ---- ids ---------------------------------------------------------------------------------------

  /** A wrong volume id, shaped from {@code near} (a real id) or from nothing. */
  String badVolumeId(String field, String near) {
    return switch (random.nextInt(10)) {
      case 0 -> classifyId(field, "", "");
      case 1 -> classifyId(field, pick(near + "\0", "vol\0x", "\0", near.substring(0, near.length() / 2) + "\0"), "id");
      case 2 -> classifyId(field, pick("v".repeat(129), near + "-" + "a".repeat(130), "x".repeat(10 * 1024),
          "\u00e9".repeat(65)), "id");
      case 3, 4, 5 -> classifyId(field, pick(malformedIds(near)), "malformed id");
      case 6 -> classifyId(field, world.snapshotId, "a snapshot id as volume id");
      default -> classifyId(field, world.absentVolumeId(hex12()), "absent volume id");
    };
  }

  /** A wrong snapshot id. */
  String badSnapshotId(String field, String near) {
    return switch (random.nextInt(10)) {
      case 0 -> classifyId(field, "", "");
      case 1 -> classifyId(field, pick(near + "\0", "snap\0x"), "id");
      case 2 -> classifyId(field, pick("s".repeat(129), near + "-" + "a".repeat(130), "y".repeat(10 * 1024)), "id");
      case 3, 4, 5 -> classifyId(field, pick(malformedIds(near)), "malformed id");
      case 6 -> classifyId(field, pick(world.idle.id(), world.mounted.id()), "a volume id as snapshot id");
      default -> classifyId(field, world.absentSnapshotId(hex12()), "absent snapshot id");
    };
  }

  /** Ids no plugin could have issued, some a character away from a real one; never a real id itself. */
  private List<String> malformedIds(String near) {
    Set<String> real = Set.of(world.mounted.id(), world.block.id(), world.idle.id(), world.snapshotId);
    return java.util.stream.Stream.of("..", ".", "../" + near, near + "/..", near + "/../" + near, "a/b", "/" + near,
            "/etc/passwd", "Vol.1", "vol..x", near.toUpperCase(java.util.Locale.ROOT), near + "/", " " + near,
            near + " ", near + "\n", near.replace('-', '_'), "v\u00f6lume", "\u0001" + near, "\u202e" + near,
            near + "@snap-x", near + "#1", "*", "%2e%2e%2f", "-", "vol-", "/" + near.replace("/", "//"),
            near.replace("/", "/./") + "/.", "\\" + near, near.substring(0, near.length() - 1))
        .filter(id -> !real.contains(id))
        .toList();
  }

  // ---- paths -------------------------------------------------------------------------------------

  /** A wrong path for a field of a request about {@code volume}, used as {@code use}. */
  String badPath(String field, PathUse use, FuzzWorld.Real volume) {
    String root = world.f.root.toString();
    return switch (random.nextInt(12)) {
      case 0 -> {
        if (use == PathUse.PUBLISH_STAGING) {
          // its own row (FAILED_PRECONDITION), which main answers with the general INVALID_ARGUMENT
          fixed(field, "empty", Code.FAILED_PRECONDITION, Code.INVALID_ARGUMENT);
        } else {
          fixed(field, "empty", Code.INVALID_ARGUMENT);
        }
        yield "";
      }
      case 1 -> {
        malformed(field, use, "NUL in path");
        yield pick(root + "/staging/a\0b", "/etc\0", root + "\0/../../etc");
      }
      case 2 -> {
        malformed(field, use, "longer than PATH_MAX");
        yield "/" + "a/".repeat(5 * 1024);
      }
      case 3 -> {
        malformed(field, use, "relative path");
        yield pick("relative/x", "x", ".", "..", "staging/default/x", "../../etc", "~/x");
      }
      case 4 -> {
        String p = pick(root + "/staging/../../../etc", root + "/./per-alloc/x", root + "//per-alloc//x",
            root + "/per-alloc/x/..", "/etc/../" + root.substring(1) + "/x", "/", "//");
        unnormalizedOrOutside(field, use, "unnormalized path '" + p + "'");
        yield p;
      }
      case 5 -> {
        String p = foreign(use, volume);
        unnormalizedOrOutside(field, use, "another volume's or role's path " + p);
        yield p;
      }
      default -> {
        String p = pick(world.outside);
        unnormalizedOrOutside(field, use, "outside the mount root: " + p);
        yield p;
      }
    };
  }

  /**
   * A path that is not one at all: the general invalid value, except for NodeGetVolumeStats, whose
   * only row for a path the volume is not at is NOT_FOUND.
   */
  private void malformed(String field, PathUse use, String kind) {
    if (use == PathUse.VOLUME_PATH && rpc == FuzzRpc.NODE_GET_VOLUME_STATS) {
      fixed(field, kind, Code.NOT_FOUND);
    } else {
      fixed(field, kind, Code.INVALID_ARGUMENT);
    }
  }

  private void unnormalizedOrOutside(String field, PathUse use, String kind) {
    if (use == PathUse.VOLUME_PATH && rpc == FuzzRpc.NODE_GET_VOLUME_STATS) {
      fixed(field, kind, Code.NOT_FOUND);
    } else if (use == PathUse.UNSTAGE || use == PathUse.UNPUBLISH) {
      absent(field, kind);
    } else {
      invalid(field, kind);
    }
  }

  /** A real path that belongs to the other volume, or to another role of this one. */
  private String foreign(PathUse use, FuzzWorld.Real v) {
    FuzzWorld.Real o = v.equals(world.mounted) ? world.block : world.mounted;
    return switch (use) {
      // mount points in use: its own publish target, the other's (a block volume's stage mounts nothing)
      case STAGE -> (v.equals(world.mounted) ? pick(v.target(), o.target()) : o.staging()).toString();
      case UNSTAGE -> pick(o.staging(), v.target(), o.target()).toString();
      case PUBLISH_STAGING -> pick(o.staging(), v.target()).toString();
      case PUBLISH_TARGET -> pick(o.target(), v.staging(), o.staging(), v.staging().resolve("inside")).toString();
      case UNPUBLISH -> pick(v.staging(), o.staging(), o.target()).toString();
      case VOLUME_PATH -> pick(o.target(), o.staging(), world.f.root.resolve("per-alloc"), world.f.root).toString();
    };
  }

  // ---- capabilities ------------------------------------------------------------------------------

  static VolumeCapability.Builder mode(VolumeCapability.Builder b, Mode mode) {
    return b.setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode));
  }

  /**
   * A wrong capability for a volume whose right one is {@code valid}; null means "unset". In {@code
   * inBand} RPCs (Validate, GetCapacity) an unsupported capability is answered OK with a negative
   * result.
   */
  VolumeCapability badCapability(String field, VolumeCapability valid, boolean required, boolean inBand) {
    return badCapability(field, valid, required, inBand, Against.STAGED);
  }

  /**
   * As above. Block access (for a volume staged for mount, or the reverse) is wrong only {@link
   * Against#STAGED}: every Caravan volume can be used either way until it is staged; another
   * filesystem than the volume was created with is wrong from creation on.
   */
  VolumeCapability badCapability(String field, VolumeCapability valid, boolean required, boolean inBand,
      Against against) {
    VolumeCapability.Builder b = valid.toBuilder();
    String kind;
    boolean specFixed = false;
    // 0-7 are wrong for any volume, 9 for a created one, 8 for a staged one, 10 ("unset") where required
    int choice = random.nextInt(required ? 11 : 10);
    if ((choice == 8 && against != Against.STAGED) || (choice == 9 && against == Against.NOTHING)) {
      choice = random.nextInt(8);
    }
    switch (choice) {
      case 0 -> {
        b.clearAccessMode();
        kind = "no access_mode";
        specFixed = true;
      }
      case 1 -> {
        mode(b, Mode.UNKNOWN);
        kind = "access_mode UNKNOWN";
        specFixed = true;
      }
      case 2 -> {
        b.setAccessMode(VolumeCapability.AccessMode.newBuilder().setModeValue(pick(99, -1, 8)));
        kind = "access_mode not in the enum";
        specFixed = true;
      }
      case 3 -> {
        b.clearAccessType();
        kind = "no access type";
        specFixed = true;
      }
      case 4 -> {
        Mode m = pick(Mode.MULTI_NODE_READER_ONLY, Mode.MULTI_NODE_SINGLE_WRITER, Mode.MULTI_NODE_MULTI_WRITER);
        mode(b, m);
        kind = "mode " + m;
      }
      case 5 -> {
        String fs = pick("btrfs", "zfs", "EXT4", "ext4 ", "../../bin/sh", "ext4\0", "x".repeat(300), "vfat");
        b.setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fs));
        kind = "fs_type '" + printable(fs) + "'";
      }
      case 6 -> {
        String flag = pick("errors=panic", "dev", "suid", "exec", "bind", "remount", "uid=0", "ro,rw", "\0",
            "x".repeat(5000), "context=system_u:object_r:etc_t:s0", "");
        b.setMount(VolumeCapability.MountVolume.newBuilder().setFsType(valid.hasMount() ? valid.getMount().getFsType() : "")
            .addMountFlags(flag));
        kind = "mount flag '" + printable(flag) + "'";
      }
      case 7 -> {
        b.setMount(VolumeCapability.MountVolume.newBuilder().setVolumeMountGroup(pick("1000", "root", "-1")));
        kind = "volume_mount_group (not offered)";
      }
      case 8 -> {
        if (valid.hasBlock()) {
          b.setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"));
          kind = "mount access for a block volume";
        } else {
          b.setBlock(VolumeCapability.BlockVolume.getDefaultInstance());
          kind = "block access for a mount volume";
        }
      }
      case 9 -> {
        b.setMount(VolumeCapability.MountVolume.newBuilder().setFsType("xfs"));
        kind = valid.hasMount() ? ANOTHER_FILESYSTEM : "mount access for a block volume";
      }
      default -> {
        fixed(field, "unset", Code.INVALID_ARGUMENT);
        return null;
      }
    }
    if (inBand) {
      answeredInBand(field, kind);
    } else if (specFixed) {
      fixed(field, kind, Code.INVALID_ARGUMENT);
    } else {
      invalid(field, kind);
    }
    return b.build();
  }

  // ---- capacities --------------------------------------------------------------------------------

  /** A wrong capacity range for a volume of {@code current} bytes (0: a volume to be made). */
  CapacityRange badCapacity(String field, long current) {
    return switch (random.nextInt(current > 0 ? 6 : 5)) {
      case 0 -> {
        fixed(field, "negative required_bytes", Code.INVALID_ARGUMENT);
        yield CapacityRange.newBuilder().setRequiredBytes(pick(-1L, Long.MIN_VALUE, -(1L << 30))).build();
      }
      case 1 -> {
        fixed(field, "negative limit_bytes", Code.INVALID_ARGUMENT);
        yield CapacityRange.newBuilder().setLimitBytes(pick(-1L, Long.MIN_VALUE)).build();
      }
      case 2 -> {
        invalid(field, "limit_bytes below required_bytes");
        yield Caps.range(64 * Caps.MIB + random.nextInt(1 << 20), 32 * Caps.MIB);
      }
      case 3 -> {
        invalid(field, "more than any pool here holds");
        yield Caps.bytes(pick(Long.MAX_VALUE, 1L << 62, 1L << 60, (1L << 50) + 1));
      }
      case 4 -> {
        invalid(field, "limit_bytes below any filesystem's minimum");
        yield CapacityRange.newBuilder().setLimitBytes(1 + random.nextInt(1 << 20)).build();
      }
      default -> {
        invalid(field, "limit_bytes below the current size");
        yield CapacityRange.newBuilder().setLimitBytes(current - Caps.MIB).build();
      }
    };
  }

  // ---- names, parameters, tokens -----------------------------------------------------------------

  /** A name CSI forbids: empty, over 128 bytes, or with a forbidden control character. */
  String badName(String field) {
    return switch (random.nextInt(3)) {
      case 0 -> {
        fixed(field, "empty", Code.INVALID_ARGUMENT);
        yield "";
      }
      case 1 -> {
        String n = pick("n".repeat(129), "\u00e9".repeat(65), "z".repeat(10 * 1024));
        fixed(field, "over 128 bytes", Code.INVALID_ARGUMENT);
        yield n;
      }
      default -> {
        char c = pick('\u0000', '\u0001', '\u0008', '\u000b', '\u000c', '\u000e', '\u001f', '\u007f', '\u0085', '\u009f');
        fixed(field, String.format("control character U+%04X", (int) c), Code.INVALID_ARGUMENT);
        yield "fuzz" + c + "name";
      }
    };
  }

  /** Parameters the plugin must refuse: unknown keys, an oversized map, a bad fsType. */
  Map<String, String> badParameters(String field, boolean inBand) {
    Map<String, String> p = new LinkedHashMap<>();
    String kind;
    boolean specFixed = true;
    switch (random.nextInt(3)) {
      case 0 -> {
        String key = pick("nope", "FSTYPE", "fsType ", "../x", "a\0b", "", "k".repeat(200), "caravan:managed");
        p.put(key, pick("1", "", "v".repeat(300)));
        kind = "unknown key '" + printable(key) + "'";
      }
      case 1 -> {
        for (int i = 0; i < 40; i++) {
          p.put("key-" + i, "v".repeat(120));
        }
        kind = "over 4 KiB in total";
      }
      default -> {
        String fs = pick("btrfs", "", "ext4\0", "x".repeat(300), "../../x");
        p.put("fsType", fs);
        kind = "fsType '" + printable(fs) + "'";
        specFixed = false;
      }
    }
    if (inBand) {
      answeredInBand(field, kind);
    } else if (specFixed) {
      fixed(field, kind, Code.INVALID_ARGUMENT);
    } else {
      invalid(field, kind);
    }
    return p;
  }

  /** A page token this plugin never issued: ABORTED (or, when malformed even as a string, INVALID_ARGUMENT). */
  String badToken(String field) {
    String t = pick("garbage!", "x", "0", "1", "-1", "after:", "YWZ0ZXI6", "bm9wZQ", "%%%", "\u00e9t\u00e9",
        "a\0b", "t".repeat(10 * 1024), " ", "==");
    if (t.indexOf('\0') >= 0 || t.length() > MAX_ID) {
      fixed(field, "token '" + printable(t) + "'", Code.ABORTED, Code.INVALID_ARGUMENT);
    } else {
      fixed(field, "token '" + printable(t) + "'", Code.ABORTED);
    }
    return t;
  }

  int badMaxEntries(String field) {
    fixed(field, "negative", Code.INVALID_ARGUMENT);
    return pick(-1, Integer.MIN_VALUE, -1000);
  }
}

package dev.caravan.storage.fs;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The mkfs command line for a filesystem type. Options that would make the tool skip its own check
 * for existing data (mke2fs {@code -F}, mkfs.xfs {@code -f} or {@code -C}) are refused, wherever
 * they appear: alone, or among other single-letter options in one argument ({@code -qF}).
 */
final class MkfsCommand {
  /**
   * {@code options} is the tool's getopt(3) option string, where a letter followed by {@code ':'}
   * takes a value (from mke2fs 1.47 and mkfs.xfs 6.1).
   */
  private record Tool(String binary, List<String> ours, String options, String force) {}

  // Discard is skipped (-E nodiscard, -K): on a large thin device it can take minutes, and a
  // fresh device is already empty.
  private static final Tool MKE2FS =
      new Tool(
          "mkfs.ext4",
          List.of("-E", "nodiscard"),
          "b:cd:e:g:i:jl:m:no:qr:s:t:vC:DE:FG:I:J:KL:M:N:O:R:ST:U:Vz:",
          "F");
  private static final Tool MKFS_XFS =
      new Tool("mkfs.xfs", List.of("-K"), "b:c:d:i:l:L:m:n:KNp:qr:s:CfV", "fC");

  private MkfsCommand() {}

  /**
   * {@code mkfsOptions} come after ours, so they can override them.
   *
   * @throws IllegalArgumentException for an option that forces the tool
   */
  static List<String> of(FsType type, List<String> mkfsOptions, Path device) {
    Tool tool =
        switch (type) {
          case EXT4 -> MKE2FS;
          case XFS -> MKFS_XFS;
        };
    refuseForce(tool, mkfsOptions);
    List<String> command = new ArrayList<>();
    command.add(tool.binary());
    command.addAll(tool.ours());
    command.addAll(mkfsOptions);
    command.add(device.toString());
    return List.copyOf(command);
  }

  // Reads the arguments as getopt does: "-abc" is -a -b -c until a letter that takes a value, which
  // is the rest of the argument or else the next one; "--" ends the options; "--name" is a long
  // option (mkfs.xfs has one, --unsupported) and "-" alone an operand.
  private static void refuseForce(Tool tool, List<String> arguments) {
    for (int i = 0; i < arguments.size(); i++) {
      String argument = arguments.get(i);
      if (argument.equals("--")) {
        return;
      }
      if (!argument.startsWith("-") || argument.startsWith("--") || argument.length() == 1) {
        continue;
      }
      for (int at = 1; at < argument.length(); at++) {
        char letter = argument.charAt(at);
        if (tool.force().indexOf(letter) >= 0) {
          throw new IllegalArgumentException(
              "mkfs option -"
                  + letter
                  + " (in "
                  + argument
                  + ") would make "
                  + tool.binary()
                  + " skip its own check for existing data");
        }
        int spec = tool.options().indexOf(letter);
        if (spec >= 0
            && spec + 1 < tool.options().length()
            && tool.options().charAt(spec + 1) == ':') {
          if (at == argument.length() - 1) {
            i++; // the value is the next argument
          }
          break;
        }
      }
    }
  }
}

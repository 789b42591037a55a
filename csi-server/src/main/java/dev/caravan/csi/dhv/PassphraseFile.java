package dev.caravan.csi.dhv;

import dev.caravan.csi.backend.Encryption;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;

/**
 * Where a DHV plugin's encrypted volumes take their passphrase from. Nomad passes a DHV plugin no
 * secrets, so the passphrase lives in a file named at install ({@code caravan dhv install
 * --passphrase-file}): its path is written into the plugin's executable, never its content. The file
 * must be a regular file (not a link) that only its owner can read or write; one trailing newline is
 * not part of the passphrase. Its content never appears in a message.
 *
 * <p>A rotation needs no new installation: beside the file, {@code <file>.previous} holds the
 * passphrase being replaced, under the same rules, and goes to the backend as the previous passphrase
 * of a CSI rotation. Each volume's next mount that the file's passphrase does not open and the
 * previous one does changes the volume's passphrase to the file's.
 */
final class PassphraseFile {
  private PassphraseFile() {}

  /** Why {@code file} cannot hold a passphrase, or nothing when it can (its content unread). */
  static Optional<String> problem(Path file) {
    if (!file.isAbsolute()) {
      return Optional.of("passphrase file " + file + " must be an absolute path");
    }
    PosixFileAttributes a;
    try {
      a = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (IOException e) {
      return Optional.of("cannot read passphrase file " + file
          + (e instanceof java.nio.file.NoSuchFileException ? ": no such file" : ": " + e.getMessage()));
    }
    if (!a.isRegularFile()) {
      return Optional.of("passphrase file " + file + " must be a regular file, not "
          + (a.isSymbolicLink() ? "a symbolic link" : a.isDirectory() ? "a directory" : "a special file"));
    }
    if (a.permissions().stream().anyMatch(PassphraseFile::shared)) {
      return Optional.of("passphrase file " + file + " has mode "
          + PosixFilePermissions.toString(a.permissions()) + "; only its owner may read it: chmod 600 it");
    }
    return Optional.empty();
  }

  /** Where the passphrase a rotation replaces is, beside {@code file}; it need not exist. */
  static Path previous(Path file) {
    return file.resolveSibling(file.getFileName() + ".previous");
  }

  /**
   * The secrets an encrypted volume's calls take, as a CO would send them: the passphrase under
   * {@link Encryption#SECRET} and, while a rotation is under way, the previous one under
   * {@link Encryption#PREVIOUS_SECRET}, both read from their files now.
   */
  static Map<String, String> secrets(Path file) {
    String passphrase = read(file);
    return rotating(file)
        ? Map.of(Encryption.SECRET, passphrase, Encryption.PREVIOUS_SECRET, read(previous(file)))
        : Map.of(Encryption.SECRET, passphrase);
  }

  /** Whether a rotation is under way: something is at {@link #previous} (read, it must be a passphrase file). */
  static boolean rotating(Path file) {
    return Files.exists(previous(file), LinkOption.NOFOLLOW_LINKS);
  }

  private static String read(Path file) {
    problem(file).ifPresent(p -> {
      throw DhvException.invalid(p);
    });
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw DhvException.failed("cannot read passphrase file " + file);
    }
    try {
      int end = bytes.length;
      if (end > 0 && bytes[end - 1] == '\n') {
        end--;
        if (end > 0 && bytes[end - 1] == '\r') {
          end--;
        }
      }
      String passphrase = new String(bytes, 0, end, StandardCharsets.UTF_8);
      int length = passphrase.getBytes(StandardCharsets.UTF_8).length;
      if (length < Encryption.MIN_BYTES || length > Encryption.MAX_BYTES || passphrase.indexOf('\0') >= 0) {
        throw DhvException.invalid("passphrase file " + file + " must hold " + Encryption.MIN_BYTES + " to "
            + Encryption.MAX_BYTES + " bytes (UTF-8) without NUL characters, and at most one trailing newline");
      }
      return passphrase;
    } finally {
      Arrays.fill(bytes, (byte) 0);
    }
  }

  /** Whether {@code p} lets anyone but the owner in. */
  private static boolean shared(PosixFilePermission p) {
    return p.name().startsWith("GROUP") || p.name().startsWith("OTHERS");
  }
}

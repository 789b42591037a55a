package dev.caravan.csi.dhv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.Encryption;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where a DHV plugin's encrypted volumes take their passphrase from, on real files. */
class PassphraseFileTest {
  private static final String SECRET = "dhv-passphrase-Wq41";

  @TempDir Path dir;

  private Path file(String name, String content, String mode) throws IOException {
    Path f = dir.resolve(name);
    Files.writeString(f, content);
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(mode));
    return f;
  }

  @Test
  void anOwnerOnlyFileGivesItsPassphraseWithoutTheTrailingNewline() throws IOException {
    assertThat(PassphraseFile.problem(file("a", SECRET + "\n", "rw-------"))).isEmpty();
    assertThat(PassphraseFile.secrets(dir.resolve("a"))).isEqualTo(Map.of(Encryption.SECRET, SECRET));
    assertThat(PassphraseFile.secrets(file("b", SECRET + "\r\n", "r--------")))
        .isEqualTo(Map.of(Encryption.SECRET, SECRET));
    // Only one newline is the file's: a passphrase may end in whitespace.
    assertThat(PassphraseFile.secrets(file("c", SECRET + " \n\n", "rw-------")))
        .isEqualTo(Map.of(Encryption.SECRET, SECRET + " \n"));
  }

  @Test
  void aFileOthersCanReadALinkADirectoryOrARelativePathIsRefusedNamingTheRule() throws IOException {
    Path shared = file("shared", SECRET, "rw-r--r--");
    Path link = Files.createSymbolicLink(dir.resolve("link"), file("target", SECRET, "rw-------"));
    List.of(
            Map.entry(shared, "chmod 600"),
            Map.entry(link, "not a symbolic link"),
            Map.entry(dir, "not a directory"),
            Map.entry(dir.resolve("missing"), "no such file"),
            Map.entry(Path.of("relative/key"), "absolute"))
        .forEach(c -> {
          assertThat(PassphraseFile.problem(c.getKey())).as(c.getKey().toString()).hasValueSatisfying(
              why -> assertThat(why).contains(c.getKey().toString(), c.getValue()));
          assertThatThrownBy(() -> PassphraseFile.secrets(c.getKey())).isInstanceOf(DhvException.class)
              .hasMessageContaining(c.getValue());
        });
    assertThatThrownBy(() -> PassphraseFile.secrets(shared)).hasMessageNotContaining(SECRET);
  }

  @Test
  void aPreviousFileBesideItAddsThePassphraseARotationReplacesUnderTheSameRules() throws IOException {
    String old = "dhv-previous-passphrase-Jk83";
    Path key = file("key", SECRET + "\n", "rw-------");
    assertThat(PassphraseFile.previous(key)).isEqualTo(dir.resolve("key.previous"));
    Path previous = file("key.previous", old + "\n", "rw-------");
    assertThat(PassphraseFile.secrets(key))
        .isEqualTo(Map.of(Encryption.SECRET, SECRET, Encryption.PREVIOUS_SECRET, old));

    // The previous file is held to the passphrase file's rules, and named when it breaks one.
    Files.setPosixFilePermissions(previous, PosixFilePermissions.fromString("rw-r-----"));
    assertThatThrownBy(() -> PassphraseFile.secrets(key)).isInstanceOfSatisfying(DhvException.class, e -> {
      assertThat(e.exitStatus()).isEqualTo(DhvException.INVALID);
      assertThat(e.getMessage()).contains(previous.toString(), "chmod 600").doesNotContain(old, SECRET);
    });
    Files.delete(previous);
    Files.createSymbolicLink(previous, file("elsewhere", old, "rw-------"));
    assertThatThrownBy(() -> PassphraseFile.secrets(key)).hasMessageContaining(previous.toString())
        .hasMessageContaining("not a symbolic link");
    Files.delete(previous);
    file("key.previous", "tiny7", "rw-------");
    assertThatThrownBy(() -> PassphraseFile.secrets(key)).hasMessageContaining(previous.toString())
        .hasMessageContaining("8 to 512 bytes").hasMessageNotContaining("tiny7");

    // Once the rotation is done and the file removed, the secrets are the passphrase alone again.
    Files.delete(previous);
    assertThat(PassphraseFile.secrets(key)).isEqualTo(Map.of(Encryption.SECRET, SECRET));
  }

  @Test
  void aPassphraseOutsideTheLengthRuleIsRefusedWithoutShowingIt() throws IOException {
    Path shortOne = file("short", "seven77\n", "rw-------");
    assertThatThrownBy(() -> PassphraseFile.secrets(shortOne)).isInstanceOfSatisfying(DhvException.class, e -> {
      assertThat(e.exitStatus()).isEqualTo(DhvException.INVALID);
      assertThat(e.getMessage()).contains(shortOne.toString(), "8 to 512 bytes").doesNotContain("seven77");
    });
    assertThatThrownBy(() -> PassphraseFile.secrets(file("empty", "", "rw-------"))).isInstanceOf(DhvException.class);
  }

  @Test
  void theInstallerWritesTheFilesPathIntoTheExecutableNeverItsContent() throws IOException {
    Path key = file("key", SECRET, "rw-------");
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    DhvInstaller installer = new DhvInstaller(java, "/caravan.jar", dir.resolve("data"), Map.of(),
        Optional.of(key));
    List<Path> written = installer.install(dir.resolve("plugins"), "file");
    for (Path p : written) {
      assertThat(Files.readString(p)).contains("'--passphrase-file' '" + key + "'").doesNotContain(SECRET);
    }
    Path shared = file("shared", SECRET, "rw-r-----");
    assertThatThrownBy(() -> new DhvInstaller(java, "/caravan.jar", dir.resolve("data"), Map.of(),
        Optional.of(shared))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--passphrase-file").hasMessageContaining("chmod 600");
  }
}

package dev.caravan.storage.zfs;

import static dev.caravan.storage.zfs.GuestZfs.MIB;
import static dev.caravan.storage.zfs.GuestZfs.freshWithDevice;
import static dev.caravan.storage.zfs.GuestZfs.zfsGet;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * ZFS native encryption through the facade against real OpenZFS, with the {@code zfs} command as
 * the referee: what the facade makes, {@code zfs load-key} opens with the same passphrase, and what
 * {@code zfs create -o encryption=on -o keyformat=passphrase} made, the facade opens. Runs in the
 * guest only.
 */
class ZfsEncryptionGuestTest {
  private static final long SIZE = 64 * MIB;
  private static final Duration DEVICE_WAIT = Duration.ofSeconds(30);
  private static final String PASSPHRASE = "Tr0ub4dor&3-guest";
  private static final String WRONG = "not-the-passphrase";
  private static final String NEW_PASSPHRASE = "correct-horse-rotated";
  // The fewest rounds OpenZFS allows: each key load derives the key again, and under emulation the
  // default's 350000 rounds take seconds (theDefaultCostIsOpenZfsDefault pays for it once).
  private static final Pbkdf2Iters CHEAPEST = new Pbkdf2Iters(Pbkdf2Iters.MINIMUM);

  private static Zfs zfs;

  @BeforeAll
  static void open() {
    if (HostRequirements.hasZfs()) {
      zfs = Zfs.open();
    }
  }

  @BeforeEach
  void requireRealZfs() {
    HostRequirements.assumeZfs();
  }

  @AfterAll
  static void close() {
    if (zfs != null) {
      zfs.close();
    }
  }

  private static byte[] bytes(String passphrase) {
    return passphrase.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void anEncryptedVolumeHasTheCliPropertiesAndItsKeyLoadsAndUnloads() throws IOException {
    String name = freshWithDevice("enc");
    zfs.createEncryptedZvol(ZvolSpec.of(name, SIZE).sparse(true), bytes(PASSPHRASE), CHEAPEST);
    assertThat(zfsGet("encryption", name)).isEqualTo("aes-256-gcm");
    assertThat(zfsGet("keyformat", name)).isEqualTo("passphrase");
    assertThat(zfsGet("keylocation", name)).isEqualTo("prompt");
    assertThat(zfsGet("encryptionroot", name)).isEqualTo(name);
    assertThat(zfsGet("pbkdf2iters", name)).as("the cost asked for").isEqualTo("100000");
    DatasetProperties p = zfs.properties(name);
    assertThat(p.isEncrypted()).isTrue();
    assertThat(p.encryptionRoot()).contains(name);
    assertThat(zfs.keyStatus(name)).isEqualTo(KeyStatus.AVAILABLE);

    Path device = zfs.zvolDevice(name, DEVICE_WAIT);
    byte[] data = GuestZfs.pattern(7, 64 * 1024);
    GuestZfs.write(device, MIB, data);

    assertThat(zfs.unloadKey(name)).isTrue();
    assertThat(zfs.keyStatus(name)).isEqualTo(KeyStatus.UNAVAILABLE);
    assertThat(zfsGet("keystatus", name)).isEqualTo("unavailable");
    assertThat(zfs.unloadKey(name)).as("a second unload finds nothing loaded").isFalse();

    assertThatThrownBy(() -> zfs.loadKey(name, bytes(WRONG)))
        .isInstanceOf(WrongKeyException.class)
        .hasMessageContaining(name)
        .hasMessageNotContaining(WRONG);
    assertThat(zfs.keyStatus(name)).isEqualTo(KeyStatus.UNAVAILABLE);

    assertThat(zfs.loadKey(name, bytes(PASSPHRASE))).isTrue();
    assertThat(zfsGet("keystatus", name)).isEqualTo("available");
    assertThat(zfs.loadKey(name, bytes(PASSPHRASE))).as("loaded already").isFalse();
    assertThatThrownBy(() -> zfs.loadKey(name, bytes(WRONG)))
        .as("a wrong passphrase is refused even while the key is loaded")
        .isInstanceOf(WrongKeyException.class);
    device = zfs.zvolDevice(name, DEVICE_WAIT);
    assertThat(GuestZfs.read(device, MIB, data.length)).isEqualTo(data);
  }

  @Test
  void theDefaultCostIsOpenZfsDefault() {
    String name = freshWithDevice("enc-default");
    zfs.createEncryptedZvol(ZvolSpec.of(name, SIZE).sparse(true), bytes(PASSPHRASE), Pbkdf2Iters.DEFAULT);
    assertThat(zfsGet("pbkdf2iters", name)).isEqualTo("350000");
    assertThat(zfs.unloadKey(name)).isTrue();
  }

  @Test
  void theZfsCommandOpensWhatTheFacadeMadeWithTheSamePassphrase() {
    String name = freshWithDevice("enc-cli");
    zfs.createEncryptedZvol(ZvolSpec.of(name, SIZE).sparse(true), bytes(PASSPHRASE), CHEAPEST);
    zfs.unloadKey(name);

    assertThat(GuestZfs.withInput(WRONG + "\n", "zfs", "load-key", name)).as("zfs load-key, wrong passphrase").isNotZero();
    assertThat(zfsGet("keystatus", name)).isEqualTo("unavailable");
    assertThat(GuestZfs.withInput(PASSPHRASE + "\n", "zfs", "load-key", name)).as("zfs load-key").isZero();
    assertThat(zfs.keyStatus(name)).isEqualTo(KeyStatus.AVAILABLE);
    assertThat(zfs.unloadKey(name)).isTrue();
    assertThat(zfsGet("keystatus", name)).isEqualTo("unavailable");
  }

  @Test
  void theFacadeOpensWhatTheZfsCommandMade() {
    String name = freshWithDevice("enc-made-by-cli");
    assertThat(GuestZfs.withInput(PASSPHRASE + "\n", "zfs", "create", "-s", "-V", "64M", "-o", "encryption=on", "-o",
        "keyformat=passphrase", "-o", "keylocation=prompt", "-o", "pbkdf2iters=100000", "-o", "caravan:managed=true",
        name)).isZero();
    unloadByCli(name);
    assertThatThrownBy(() -> zfs.loadKey(name, bytes(WRONG))).isInstanceOf(WrongKeyException.class);
    assertThat(zfs.loadKey(name, bytes(PASSPHRASE))).isTrue();
    assertThat(zfsGet("keystatus", name)).isEqualTo("available");
    assertThat(zfs.unloadKey(name)).isTrue();
    assertThat(zfsGet("keystatus", name)).isEqualTo("unavailable");
  }

  @Test
  void snapshotsAndIndependentCopiesStayEncryptedUnderTheSamePassphrase() throws IOException {
    String name = freshWithDevice("enc-src");
    zfs.createEncryptedZvol(ZvolSpec.of(name, SIZE).sparse(true), bytes(PASSPHRASE), CHEAPEST);
    byte[] data = GuestZfs.pattern(11, 32 * 1024);
    GuestZfs.write(zfs.zvolDevice(name, DEVICE_WAIT), 0, data);
    String snapshot = zfs.snapshot(name, "s1");
    assertThat(zfsGet("encryption", snapshot)).isEqualTo("aes-256-gcm");
    zfs.unloadKey(name);

    String copy = freshWithDevice("enc-copy");
    zfs.cloneIndependent(snapshot, ZvolSpec.of(copy, SIZE).sparse(true));
    DatasetProperties c = zfs.properties(copy);
    assertThat(c.isEncrypted()).isTrue();
    assertThat(c.encryptionRoot()).contains(copy);
    assertThat(c.keyStatus()).as("a raw copy arrives with no key loaded").isEqualTo(KeyStatus.UNAVAILABLE);
    assertThatThrownBy(() -> zfs.loadKey(copy, bytes(WRONG))).isInstanceOf(WrongKeyException.class);
    assertThat(zfs.loadKey(copy, bytes(PASSPHRASE))).isTrue();
    assertThat(GuestZfs.read(zfs.zvolDevice(copy, DEVICE_WAIT), 0, data.length)).isEqualTo(data);
    assertThat(zfs.unloadKey(copy)).isTrue();
    assertThat(zfs.keyStatus(name)).as("the source's key is its own").isEqualTo(KeyStatus.UNAVAILABLE);
  }

  @Test
  void aNewPassphraseOpensTheVolumeItsSnapshotsAndItsClonesAndTheOldOneNothing() throws IOException {
    String name = freshWithDevice("enc-rotate");
    zfs.createEncryptedZvol(ZvolSpec.of(name, SIZE).sparse(true), bytes(PASSPHRASE), CHEAPEST);
    byte[] data = GuestZfs.pattern(13, 32 * 1024);
    GuestZfs.write(zfs.zvolDevice(name, DEVICE_WAIT), 0, data);
    String before = zfs.snapshot(name, "before");
    String clone = freshWithDevice("enc-rotate-clone");
    GuestZfs.dependentClone(before, clone);
    assertThat(zfsGet("encryptionroot", clone)).as("a dependent clone shares its origin's root").isEqualTo(name);
    String salt = zfsGet("pbkdf2salt", name);

    zfs.changePassphrase(name, bytes(NEW_PASSPHRASE));
    assertThat(zfs.keyStatus(name)).as("the key stays loaded").isEqualTo(KeyStatus.AVAILABLE);
    assertThat(zfsGet("pbkdf2iters", name)).as("the volume's cost is kept").isEqualTo("100000");
    assertThat(zfsGet("pbkdf2salt", name)).as("a new salt, as zfs change-key picks").isNotEqualTo(salt);
    assertThat(zfsGet("keyformat", name)).isEqualTo("passphrase");
    assertThat(zfsGet("keylocation", name)).isEqualTo("prompt");
    assertThat(zfs.unloadKey(name)).isTrue();
    assertThat(zfsGet("keystatus", clone)).as("the clone's key went with its root's").isEqualTo("unavailable");

    assertThatThrownBy(() -> zfs.loadKey(name, bytes(PASSPHRASE))).isInstanceOf(WrongKeyException.class);
    assertThat(GuestZfs.withInput(PASSPHRASE + "\n", "zfs", "load-key", name)).as("zfs load-key, old passphrase").isNotZero();
    assertThat(GuestZfs.withInput(NEW_PASSPHRASE + "\n", "zfs", "load-key", name)).as("zfs load-key, new passphrase").isZero();
    assertThat(zfsGet("keystatus", clone)).isEqualTo("available");
    assertThat(GuestZfs.read(zfs.zvolDevice(name, DEVICE_WAIT), 0, data.length)).isEqualTo(data);
    unloadByCli(name);

    // A copy of the snapshot taken before the change arrives under the new passphrase: a snapshot
    // has no wrapping key of its own.
    String copy = freshWithDevice("enc-rotate-copy");
    zfs.cloneIndependent(before, ZvolSpec.of(copy, SIZE).sparse(true));
    assertThatThrownBy(() -> zfs.loadKey(copy, bytes(PASSPHRASE))).isInstanceOf(WrongKeyException.class);
    assertThat(zfs.loadKey(copy, bytes(NEW_PASSPHRASE))).isTrue();
    assertThat(GuestZfs.read(zfs.zvolDevice(copy, DEVICE_WAIT), 0, data.length)).isEqualTo(data);
    assertThat(zfs.unloadKey(copy)).isTrue();
  }

  @Test
  void aPassphraseChangeNeedsTheKeyLoadedAndLeavesTheOldOneOtherwise() {
    String name = freshWithDevice("enc-rotate-unloaded");
    zfs.createEncryptedZvol(ZvolSpec.of(name, SIZE).sparse(true), bytes(PASSPHRASE), CHEAPEST);
    assertThat(zfs.unloadKey(name)).isTrue();
    assertThatThrownBy(() -> zfs.changePassphrase(name, bytes(NEW_PASSPHRASE)))
        .isInstanceOf(ZfsException.class)
        .hasMessageContaining("is its key loaded?")
        .hasMessageNotContaining(NEW_PASSPHRASE);
    assertThat(zfs.loadKey(name, bytes(PASSPHRASE))).isTrue();
    assertThat(zfs.unloadKey(name)).isTrue();
  }

  @Test
  void keyOperationsRefuseAnUnencryptedVolume() {
    String name = freshWithDevice("plain");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    assertThat(zfs.keyStatus(name)).isEqualTo(KeyStatus.NONE);
    assertThat(zfs.properties(name).isEncrypted()).isFalse();
    assertThatThrownBy(() -> zfs.loadKey(name, bytes(PASSPHRASE)))
        .isInstanceOfSatisfying(ZfsRefusedException.class,
            e -> assertThat(e.reason()).isEqualTo(ZfsRefusedException.Reason.NOT_ENCRYPTED));
  }

  /**
   * {@code zfs unload-key}, again while it says the dataset is busy: a volume's device that just
   * appeared is opened by udev's probing for a moment.
   */
  private static void unloadByCli(String name) {
    for (int attempt = 1; ; attempt++) {
      if (GuestZfs.withInput("", "zfs", "unload-key", name) == 0) {
        return;
      }
      assertThat(attempt).as("zfs unload-key %s keeps failing", name).isLessThan(20);
      try {
        Thread.sleep(500);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }
}

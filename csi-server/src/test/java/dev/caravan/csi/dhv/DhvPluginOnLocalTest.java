package dev.caravan.csi.dhv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.dhv.DhvEnv.Node;
import dev.caravan.csi.dhv.DhvEnv.Volume;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The DHV plugin on the local backend (ZFS zvols), in the guest kernel of {@code scripts/guest-suite}:
 * the operations Nomad runs, with Nomad's variable sets, against real zvols, mkfs and mounts. The
 * operations run in this JVM through {@link DhvMain#run}, the entry point the installed executable
 * {@code exec}s: how Nomad runs the executable (wiped environment, deadlines, SIGKILL of the child) is
 * the same wrapper for every backend and is tested on the host by {@link DhvPluginOnFileTest}, and a
 * JVM start per operation costs tens of seconds under the guest's emulated CPU.
 */
class DhvPluginOnLocalTest {
  private static final long MIB = 1L << 20;
  private static final String POOL = System.getenv().getOrDefault("CARAVAN_TEST_POOL", "caravan-test");

  @TempDir Path work;
  private Path dataDir;
  private String parent;
  private Node nodeA;
  private Node nodeB;

  @BeforeEach
  void setUp() {
    HostRequirements.assumeZfs();
    dataDir = work.resolve("data");
    String name = work.getFileName().toString().replaceAll("[^A-Za-z0-9]", "").toLowerCase(Locale.ROOT);
    parent = "dhv-" + name.substring(Math.max(0, name.length() - 10));
    nodeA = new Node(uuid(), work.resolve("nodeA/host_volumes"), work.resolve("plugins"));
    nodeB = new Node(uuid(), work.resolve("nodeB/host_volumes"), work.resolve("plugins"));
  }

  /** What a failed test left mounted under its directory, and its zvols, go before the directory does. */
  @AfterEach
  void tearDown() {
    if (dataDir == null) {
      return;
    }
    MountTable.read().stream().filter(m -> m.mountPoint().startsWith(work))
        .sorted(Comparator.comparing((MountEntry m) -> m.mountPoint().getNameCount()).reversed())
        .forEach(m -> Mounts.unmount(m.mountPoint()));
    if (!zfs("list", "-H", "-o", "name", POOL + "/" + parent).isEmpty()) {
      zfs("destroy", "-r", POOL + "/" + parent);
    }
  }

  @Test
  void immediateCreateRestoreGrowDeleteOnAZvol() throws IOException {
    Volume v = volume("db", 32 * MIB).withParameters("{\"compression\":\"lz4\",\"mode\":\"0750\"}");
    Map<String, Object> created = ok("immediate", "create", DhvEnv.create(nodeA, v));
    Path path = nodeA.volumesDir().resolve(v.id());
    assertThat(created).containsEntry("path", path.toString()).containsEntry("bytes", 32 * MIB);
    assertThat(zvols()).as("one zvol, its compression the parameter's").hasSize(1);
    assertThat(zfs("get", "-H", "-o", "value", "compression", zvols().getFirst())).isEqualTo("lz4");
    assertThat(MountTable.at(path).orElseThrow().source()).as("the zvol's device is mounted")
        .isEqualTo("/dev/zvol/" + zvols().getFirst());
    Files.writeString(path.resolve("data.txt"), "kept");

    // A reboot takes the mount down; the create Nomad runs at agent start puts it back, data untouched.
    assertThat(Mounts.unmount(path)).isTrue();
    assertThat(ok("immediate", "create", DhvEnv.create(nodeA, v))).isEqualTo(created);
    assertThat(Files.readString(path.resolve("data.txt"))).isEqualTo("kept");

    long before = Filesystems.stats(path).totalBytes();
    assertThat(ok("immediate", "create", DhvEnv.create(nodeA, v.withMin(96 * MIB)))).containsEntry("bytes", 96 * MIB);
    assertThat(zfs("get", "-Hp", "-o", "value", "volsize", zvols().getFirst())).isEqualTo(Long.toString(96 * MIB));
    assertThat(Filesystems.stats(path).totalBytes()).as("the filesystem grew with the zvol").isGreaterThan(before * 2);
    assertThat(Files.readString(path.resolve("data.txt"))).isEqualTo("kept");

    Map<String, String> unknown = DhvEnv.create(nodeA, volume("bad", 16 * MIB).withParameters("{\"color\":\"red\"}"));
    Outcome refused = run("immediate", unknown);
    assertThat(refused.status()).as(refused.toString()).isEqualTo(DhvException.INVALID);
    assertThat(refused.stdout()).contains("'color' is not known").contains("compression");
    assertThat(zvols()).as("a refused create makes nothing").hasSize(1);

    // An operator's snapshot of the zvol: delete refuses to destroy it (leaves only, never recursive).
    String zvol = zvols().getFirst();
    zfs("snapshot", zvol + "@operator");
    Outcome held = run("immediate", DhvEnv.delete(nodeA, v, path.toString()));
    assertThat(held.status()).as(held.toString()).isEqualTo(DhvException.FAILED);
    assertThat(held.stdout()).contains("snapshot");
    assertThat(zfs("list", "-H", "-o", "name", "-t", "all", zvol + "@operator")).isNotEmpty();
    assertThat(zvols()).containsExactly(zvol);
    zfs("destroy", zvol + "@operator");

    ok("immediate", "delete", DhvEnv.delete(nodeA, v, path.toString()));
    assertThat(MountTable.isMountPoint(path)).isFalse();
    assertThat(path).doesNotExist();
    assertThat(zvols()).isEmpty();
    ok("immediate", "delete", DhvEnv.delete(nodeA, v, path.toString()));
  }

  @Test
  void anEncryptedZvolTakesItsPassphraseFromThePluginsFileAndNowhereElse() throws IOException {
    String passphrase = "dhv-zvol-passphrase-Rt58";
    Path keyFile = work.resolve("dhv.key");
    Files.writeString(keyFile, passphrase + "\n");
    Files.setPosixFilePermissions(keyFile, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    Volume v = volume("secret", 32 * MIB).withParameters("{\"encryption\":\"on\"}");

    Outcome noFile = run("immediate", DhvEnv.create(nodeA, v));
    assertThat(noFile.status()).as(noFile.toString()).isEqualTo(DhvException.INVALID);
    assertThat(noFile.stdout()).contains("--passphrase-file");
    assertThat(zvols()).as("a refused create makes nothing").isEmpty();

    // The least key work allowed (the default's 350000 rounds cost seconds per key load in the guest).
    Map<String, Object> created = ok("immediate", "create", DhvEnv.create(nodeA, v), "--passphrase-file",
        keyFile.toString(), "--zfs-pbkdf2-iters", "100000");
    Path path = nodeA.volumesDir().resolve(v.id());
    assertThat(created).containsEntry("path", path.toString());
    String zvol = zvols().getFirst();
    assertThat(zfs("get", "-H", "-o", "value", "encryption", zvol)).isNotEqualTo("off");
    assertThat(zfs("get", "-H", "-o", "value", "pbkdf2iters", zvol)).as("the executable's --zfs-pbkdf2-iters")
        .isEqualTo("100000");
    assertThat(zfs("get", "-H", "-o", "value", "keystatus", zvol)).isEqualTo("available");
    Files.writeString(path.resolve("data.txt"), "kept");
    // What a reboot takes away, the create at agent start puts back, with the file's passphrase.
    assertThat(Mounts.unmount(path)).isTrue();
    zfs("unload-key", zvol);
    // A file holding another passphrase: refused naming the file and neither passphrase; the zvol is kept, locked.
    String wrong = "not-the-zvol-passphrase-Qe31";
    Path wrongFile = work.resolve("other.key");
    Files.writeString(wrongFile, wrong + "\n");
    Files.setPosixFilePermissions(wrongFile, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    Outcome refused = run("immediate", DhvEnv.create(nodeA, v), "--passphrase-file", wrongFile.toString());
    assertThat(refused.status()).as(refused.toString()).isNotZero();
    assertThat(refused.stdout()).contains("passphrase file " + wrongFile).doesNotContain(wrong).doesNotContain(passphrase);
    assertThat(zvols()).as("a refused restore keeps the zvol").containsExactly(zvol);
    assertThat(zfs("get", "-H", "-o", "value", "keystatus", zvol)).isEqualTo("unavailable");
    assertThat(MountTable.isMountPoint(path)).isFalse();
    assertThat(ok("immediate", "create", DhvEnv.create(nodeA, v), "--passphrase-file", keyFile.toString()))
        .isEqualTo(created);
    assertThat(Files.readString(path.resolve("data.txt"))).isEqualTo("kept");

    try (var files = Files.walk(dataDir)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        assertThat(Files.readString(f, StandardCharsets.ISO_8859_1)).as(f.toString()).doesNotContain(passphrase);
      }
    }
    ok("immediate", "delete", DhvEnv.delete(nodeA, v, path.toString()), "--passphrase-file", keyFile.toString());
    assertThat(zvols()).isEmpty();
  }

  @Test
  void aFailedCreateNeverDestroysAZvolItFoundHoldingData() throws IOException {
    Volume v = volume("found", 16 * MIB);
    Map<String, Object> created = ok("immediate", "create", DhvEnv.create(nodeA, v));
    Path path = nodeA.volumesDir().resolve(v.id());
    Files.writeString(path.resolve("data.txt"), "kept");
    assertThat(Mounts.unmount(path)).isTrue();
    // The plugin's own state is gone (a data directory restored from before the create); the zvol is not.
    Trees.delete(dataDir.resolve("dhv"));
    // The agent-start create's mount fails once.
    Files.delete(path);
    Files.createSymbolicLink(path, Files.createDirectories(work.resolve("elsewhere")));
    Outcome failed = run("immediate", DhvEnv.create(nodeA, v));
    assertThat(failed.status()).as(failed.toString()).isEqualTo(DhvException.FAILED);
    assertThat(zvols()).as("the create found the zvol, so its failure destroys nothing").hasSize(1);

    Files.delete(path);
    assertThat(ok("immediate", "create", DhvEnv.create(nodeA, v))).isEqualTo(created);
    assertThat(Files.readString(path.resolve("data.txt"))).isEqualTo("kept");
  }

  @Test
  void theAutoDeleteRemovesOnlyItsOwnZvol() throws IOException {
    Volume a = volume("a", 16 * MIB);
    Volume b = volume("b", 16 * MIB);
    ok("immediate", "create", DhvEnv.create(nodeA, a));
    ok("immediate", "create", DhvEnv.create(nodeA, b));
    Files.writeString(nodeA.volumesDir().resolve(a.id()).resolve("owner"), "a");
    ok("immediate", "delete", DhvEnv.autoDelete(nodeA, b));
    assertThat(nodeA.volumesDir().resolve(b.id())).doesNotExist();
    assertThat(Files.readString(nodeA.volumesDir().resolve(a.id()).resolve("owner"))).isEqualTo("a");
    assertThat(zvols()).hasSize(1);
  }

  /**
   * Deferred mode: the zvol is made at create on the node that ran it, and mounted only while an
   * allocation there has it published. A zvol lives in one node's pool, so a publish on any other
   * node is refused, naming the owner, and leaves no claim behind; one writer at a time, as on file.
   */
  @Test
  void deferredZvolsArePublishedOnlyOnTheirOwnNodeAndOneAtATime() throws IOException {
    Volume v = volume("shared", 16 * MIB);
    assertThat(ok("deferred", "create", DhvEnv.create(nodeA, v))).containsOnlyKeys("bytes");
    assertThat(zvols()).hasSize(1);
    Path pathA = nodeA.volumesDir().resolve(v.id());
    assertThat(MountTable.isMountPoint(pathA)).as("create mounts nothing").isFalse();

    Map<String, Object> onA = ok("deferred", "publish", DhvEnv.publish(nodeA, v, uuid(), "single-node-writer", false));
    assertThat(onA).containsEntry("path", pathA.toString());
    Files.writeString(pathA.resolve("data.txt"), "written on A");

    Outcome held = run("deferred", DhvEnv.publish(nodeB, v, uuid(), "single-node-writer", false));
    assertThat(held.status()).as(held.toString()).isEqualTo(DhvException.HELD_ELSEWHERE);
    assertThat(run("deferred", DhvEnv.delete(nodeA, v, "")).status()).as("delete while published")
        .isEqualTo(DhvException.FAILED);
    assertThat(Files.readString(pathA.resolve("data.txt"))).isEqualTo("written on A");

    ok("deferred", "unpublish", DhvEnv.unpublish(nodeA, v, uuid()));
    assertThat(MountTable.isMountPoint(pathA)).isFalse();
    Path pathB = nodeB.volumesDir().resolve(v.id());
    Outcome elsewhere = run("deferred", DhvEnv.publish(nodeB, v, uuid(), "single-node-writer", false));
    assertThat(elsewhere.status()).as(elsewhere.toString()).isNotZero();
    assertThat(elsewhere.stdout()).contains("belongs to node " + nodeA.id());
    assertThat(MountTable.isMountPoint(pathB)).isFalse();

    ok("deferred", "publish", DhvEnv.publish(nodeA, v, uuid(), "single-node-writer", false));
    assertThat(Files.readString(pathA.resolve("data.txt"))).as("the refused publish claimed nothing")
        .isEqualTo("written on A");
    ok("deferred", "unpublish", DhvEnv.unpublish(nodeA, v, uuid()));
    ok("deferred", "delete", DhvEnv.delete(nodeA, v, ""));
    assertThat(zvols()).isEmpty();
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private record Outcome(int status, String stdout) {}

  private Outcome run(String mode, Map<String, String> env, String... more) {
    List<String> args = new ArrayList<>(List.of("--driver", "local", "--mode", mode, "--data-dir", dataDir.toString(),
        "--option", "pools=" + POOL, "--option", "parent-dataset=" + parent, "--option", "device-wait-seconds=60"));
    args.addAll(List.of(more));
    args.add(env.get("DHV_OPERATION"));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int status;
    try (PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8)) {
      status = DhvMain.run(args.toArray(String[]::new), env, ps);
    }
    return new Outcome(status, out.toString(StandardCharsets.UTF_8).strip());
  }

  @SuppressWarnings("unchecked") // the plugin's answer is one JSON object
  private Map<String, Object> ok(String mode, String op, Map<String, String> env, String... more) {
    assertThat(env.get("DHV_OPERATION")).isEqualTo(op);
    Outcome o = run(mode, env, more);
    assertThat(o.status()).as(o.toString()).isZero();
    return (Map<String, Object>) dev.caravan.csi.support.Json.parse(o.stdout());
  }

  /** The zvols below this test's parent dataset, named by the {@code zfs} command (the oracle). */
  private List<String> zvols() {
    String out = zfs("list", "-H", "-o", "name", "-t", "volume", "-r", POOL + "/" + parent);
    return out.isEmpty() ? List.of() : List.of(out.split("\n"));
  }

  /** The {@code zfs} command's output, or "" when it finds nothing. */
  private static String zfs(String... args) {
    List<String> command = new ArrayList<>(List.of("zfs"));
    command.addAll(List.of(args));
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError(command + " did not finish in 120 s");
      }
      return p.exitValue() == 0 ? out : "";
    } catch (IOException e) {
      throw new AssertionError(command + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(command + " interrupted", e);
    }
  }

  private static Volume volume(String name, long minBytes) {
    return new Volume(uuid(), name, "default", minBytes, 0, "null");
  }

  private static String uuid() {
    return UUID.randomUUID().toString();
  }
}

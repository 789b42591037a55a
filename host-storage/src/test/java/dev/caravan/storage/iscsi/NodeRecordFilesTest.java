package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NodeRecordFilesTest {
  // The shape iscsiadm 2.1.8 writes (abridged): a begin marker, name = value lines, an end marker.
  private static final String RECORD =
      """
      # BEGIN RECORD 2.1.8
      node.name = iqn.2003-01.org.example:vol1
      node.tpgt = 1
      node.startup = automatic
      node.session.auth.authmethod = CHAP
      node.session.auth.username = old
      node.session.auth.password = old-secret
      node.session.auth.username_in = oldtarget
      node.session.auth.password_in = old-target-secret
      node.session.initial_login_retry_max = 8
      node.session.timeo.replacement_timeout = 120
      node.conn[0].address = 127.0.0.1
      node.conn[0].timeo.noop_out_interval = 5
      node.conn[0].timeo.noop_out_timeout = 5
      node.conn[0].port = 3260
      # END RECORD
      """;

  @Test
  void oneWayChapReplacesEveryOldCredentialAndStartupBecomesManual() {
    String updated = NodeRecordFiles.withSettings(RECORD, PathTimeouts.MULTIPATH, Optional.of(Chap.oneWay("alice", "new-secret-12")));

    assertThat(updated)
        .startsWith("# BEGIN RECORD 2.1.8\n")
        .endsWith("node.session.auth.password = new-secret-12\n# END RECORD\n")
        .contains(
            "node.name = iqn.2003-01.org.example:vol1",
            "node.conn[0].port = 3260",
            "node.startup = manual",
            "node.session.initial_login_retry_max = 0",
            "node.session.auth.authmethod = CHAP",
            "node.session.auth.username = alice")
        .doesNotContain("automatic", "old", "username_in", "password_in", "retry_max = 8");
  }

  @Test
  void mutualChapAddsTheTargetsCredentials() {
    String updated =
        NodeRecordFiles.withSettings(RECORD, PathTimeouts.MULTIPATH, Optional.of(Chap.mutual("alice", "s1-secret-123", "nas", "s2-secret-456")));

    assertThat(updated)
        .contains(
            "node.session.auth.username_in = nas\n",
            "node.session.auth.password_in = s2-secret-456\n",
            "node.session.auth.password = s1-secret-123\n")
        .doesNotContain("old");
  }

  @Test
  void withoutChapTheRecordSaysNoneAndKeepsNoSecret() {
    String updated = NodeRecordFiles.withSettings(RECORD, PathTimeouts.MULTIPATH, Optional.empty());

    assertThat(updated)
        .contains("node.session.auth.authmethod = None", "node.startup = manual")
        .doesNotContain("password", "username");
  }

  @Test
  void aRecordWithoutEndMarkerGetsTheSettingsAtTheEnd() {
    String updated = NodeRecordFiles.withSettings("node.name = x\n  node.startup=automatic\n", PathTimeouts.MULTIPATH, Optional.empty());

    assertThat(updated)
        .isEqualTo(
            """
            node.name = x
            node.startup = manual
            node.session.initial_login_retry_max = 0
            node.session.timeo.replacement_timeout = 15
            node.conn[0].timeo.noop_out_interval = 5
            node.conn[0].timeo.noop_out_timeout = 10
            node.session.auth.authmethod = None
            """);
  }

  @Test
  void thePathTimeoutsReplaceOpenIscsisDefaultsOnce() {
    PathTimeouts timeouts = new PathTimeouts(Duration.ofSeconds(7), Duration.ofSeconds(3), Duration.ofSeconds(4));

    String updated = NodeRecordFiles.withSettings(RECORD, timeouts, Optional.empty());

    assertThat(updated)
        .contains(
            "node.session.timeo.replacement_timeout = 7\n",
            "node.conn[0].timeo.noop_out_interval = 3\n",
            "node.conn[0].timeo.noop_out_timeout = 4\n")
        .doesNotContain("= 120", "noop_out_timeout = 5");
    assertThat(updated.lines().filter(l -> l.contains("timeo."))).hasSize(3);
    assertThat(NodeRecordFiles.withSettings(updated, timeouts, Optional.empty()))
        .as("applying the same settings again changes nothing").isEqualTo(updated);
  }

  @Test
  void findsTheRecordFileInBothLayouts(@TempDir Path nodes) throws IOException {
    NodeRecord record = new NodeRecord("iqn.2003-01.org.example:vol1", Portal.parse("127.0.0.1"), 1, "default");
    Path portal = nodes.resolve("iqn.2003-01.org.example:vol1").resolve("127.0.0.1,3260,1");
    Files.createDirectories(portal.getParent());
    Files.writeString(portal, RECORD); // before open-iscsi 2.0-870 the portal entry was the record
    assertThat(NodeRecordFiles.fileOf(nodes, record)).isEqualTo(portal);

    Files.delete(portal);
    Files.createDirectories(portal);
    assertThat(NodeRecordFiles.fileOf(nodes, record)).isEqualTo(portal.resolve("default"));

    // iscsiadm -o new: no portal group tag yet, so no tpgt in the name.
    NodeRecord unknownTpgt = new NodeRecord(record.target(), record.portal(), -1, "default");
    Path legacy = portal.resolveSibling("127.0.0.1,3260");
    Files.writeString(legacy, RECORD);
    assertThat(NodeRecordFiles.fileOf(nodes, unknownTpgt)).isEqualTo(legacy);
  }

  @Test
  void applyRewritesTheFileOnlyRootCanReadAndLeavesNothingElse(@TempDir Path etc) throws IOException {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        Files.isWritable(Path.of("/run/lock")), "needs to write /run/lock (iscsiadm's lock lives there): run as root");
    Path nodes = etc.resolve("nodes");
    NodeRecord record = new NodeRecord("iqn.2003-01.org.example:vol1", Portal.parse("127.0.0.1"), 1, "default");
    Path file = nodes.resolve("iqn.2003-01.org.example:vol1").resolve("127.0.0.1,3260,1").resolve("default");
    Files.createDirectories(file.getParent());
    Files.writeString(file, RECORD);

    NodeRecordFiles.apply(nodes, record, PathTimeouts.MULTIPATH, Optional.of(Chap.oneWay("alice", "new-secret-12")));

    assertThat(Files.readString(file)).isEqualTo(NodeRecordFiles.withSettings(RECORD, PathTimeouts.MULTIPATH, Optional.of(Chap.oneWay("alice", "new-secret-12"))));
    assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
        .isEqualTo("rw-------");
    try (var left = Files.walk(etc)) {
      assertThat(left.filter(Files::isRegularFile)).containsExactly(file);
    }
    assertThat(Path.of("/run/lock/iscsi/lock.write")).doesNotExist();
  }
}

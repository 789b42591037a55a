package dev.caravan.csi.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.CsiException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How request and journal paths are resolved and confined, on a real directory tree with real symlinks. */
class AllowedRootsTest {
  @TempDir Path dir;

  @Test
  void theDefaultRootFollowsNomadsHostLayoutElseTheTaskRoot() {
    assertThat(AllowedRoots.defaultFor(Path.of("/opt/nomad/data/client/csi/plugins/4f2a/csi.sock")))
        .containsExactly(Path.of("/opt/nomad/data/client/csi"));
    assertThat(AllowedRoots.defaultFor(Path.of("/csi/csi.sock"))).containsExactly(Path.of("/local/csi"));
    assertThat(AllowedRoots.defaultFor(Path.of("/run/caravan/csi.sock"))).containsExactly(Path.of("/local/csi"));
    assertThat(AllowedRoots.defaultFor(Path.of("/var/csi/plugins/a/other.sock"))).containsExactly(Path.of("/local/csi"));
  }

  @Test
  void aRootReachedThroughASymlinkAcceptsPathsSpeltEitherWay() throws IOException {
    Path real = Files.createDirectories(dir.resolve("disk/nomad/client/csi"));
    Path link = Files.createSymbolicLink(dir.resolve("nomad"), dir.resolve("disk/nomad"));
    AllowedRoots roots = AllowedRoots.of(List.of(link.resolve("client/csi")));
    assertThat(roots.resolved()).containsExactly(real.toRealPath());
    Path parent = Files.createDirectories(real.resolve("monolith/caravan/per-alloc/a1/v"));

    Path viaLink = link.resolve("client/csi/monolith/caravan/per-alloc/a1/v/rw");
    assertThat(roots.resolve("target_path", viaLink)).isEqualTo(parent.toRealPath().resolve("rw"));
    assertThat(roots.resolve("target_path", parent.resolve("rw"))).isEqualTo(parent.toRealPath().resolve("rw"));
    // directories Nomad has not created yet are kept as written
    assertThat(roots.resolve("target_path", link.resolve("client/csi/monolith/caravan/per-alloc/a2/v/rw")))
        .isEqualTo(real.toRealPath().resolve("monolith/caravan/per-alloc/a2/v/rw"));
  }

  @Test
  void refusesPathsOutsideTheRootsAndSymlinksBelowThemOrAtThePath() throws IOException {
    Path root = Files.createDirectories(dir.resolve("state/csi"));
    Path outside = Files.createDirectories(dir.resolve("outside"));
    Path inside = Files.createDirectories(root.resolve("monolith/caravan/real"));
    AllowedRoots roots = AllowedRoots.of(List.of(root));

    assertRefused(roots, outside.resolve("x"), "not below an allowed root");
    assertRefused(roots, root, "not below an allowed root");
    Files.createSymbolicLink(root.resolve("monolith/caravan/out"), outside);
    assertRefused(roots, root.resolve("monolith/caravan/out/x"), "passes through the symlink");
    Files.createSymbolicLink(root.resolve("monolith/caravan/in"), inside);
    assertRefused(roots, root.resolve("monolith/caravan/in/x"), "passes through the symlink");
    Files.createSymbolicLink(root.resolve("monolith/caravan/dangling"), dir.resolve("nowhere"));
    assertRefused(roots, root.resolve("monolith/caravan/dangling/x"), "passes through the symlink");
    assertRefused(roots, root.resolve("monolith/caravan/in"), "is a symlink");
    assertThat(roots.resolve("f", root.resolve("monolith/caravan/real/x"))).isEqualTo(inside.toRealPath().resolve("x"));
  }

  @Test
  void aRootMadeAfterStartIsStillCheckedAllTheWay() throws IOException {
    // At start the root does not exist, so its real path is not known; when it appears as a link, a
    // path spelt through it is what the link makes it, and still refused through a link below it.
    Path elsewhere = Files.createDirectories(dir.resolve("disk/csi"));
    AllowedRoots roots = AllowedRoots.of(List.of(dir.resolve("state/csi")));
    Files.createDirectories(dir.resolve("state"));
    Files.createSymbolicLink(dir.resolve("state/csi"), elsewhere);
    Path inside = Files.createDirectories(elsewhere.resolve("monolith/caravan/a1"));

    assertRefused(roots, dir.resolve("state/csi/monolith/caravan/a1/rw"), "is not below an allowed root");
    Files.createSymbolicLink(elsewhere.resolve("monolith/caravan/a2"), inside);
    assertRefused(AllowedRoots.of(List.of(dir.resolve("state/csi"))), dir.resolve("state/csi/monolith/caravan/a2/rw"),
        "passes through the symlink");
    assertThat(AllowedRoots.of(List.of(dir.resolve("state/csi"))).resolve("f", dir.resolve("state/csi/monolith/caravan/a1/rw")))
        .isEqualTo(inside.toRealPath().resolve("rw"));

    // Made after start as a directory (the plugin makes its socket's), the root confines as one.
    Path later = dir.toRealPath().resolve("later/csi");
    AllowedRoots early = AllowedRoots.of(List.of(later));
    Path a1 = Files.createDirectories(later.resolve("monolith/caravan/a1"));
    assertThat(early.resolve("f", a1.resolve("rw"))).isEqualTo(a1.resolve("rw"));
    Files.createSymbolicLink(later.resolve("monolith/caravan/a3"), elsewhere);
    assertRefused(early, later.resolve("monolith/caravan/a3/rw"), "passes through the symlink");
    assertRefused(early, later.resolve("monolith/caravan/a3"), "is a symlink");
  }

  @Test
  void canonicalResolvesTheParentsButNeverTheLastComponent() throws IOException {
    Path real = Files.createDirectories(dir.resolve("real"));
    Path link = Files.createSymbolicLink(dir.resolve("link"), real);
    assertThat(AllowedRoots.canonical(link)).isEqualTo(dir.toRealPath().resolve("link"));
    assertThat(AllowedRoots.canonical(link.resolve("x"))).isEqualTo(real.toRealPath().resolve("x"));
    assertThat(AllowedRoots.canonical(link.resolve("missing/deeper/x")))
        .isEqualTo(real.toRealPath().resolve("missing/deeper/x"));
  }

  private static void assertRefused(AllowedRoots roots, Path path, String rule) {
    assertThatThrownBy(() -> roots.resolve("target_path", path))
        .isInstanceOfSatisfying(CsiException.class, e -> assertThat(e.kind()).isEqualTo(CsiException.Kind.INVALID_ARGUMENT))
        .hasMessageContaining("target_path")
        .hasMessageContaining(path.toString())
        .hasMessageContaining(rule);
  }
}

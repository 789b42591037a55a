package dev.caravan.csi.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.CsiException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class ValidateAndPagesTest {
  @Test
  void pathsMustBeAbsoluteAndNormalized() {
    assertThat(Validate.path("p", "/a/b/")).isEqualTo(Path.of("/a/b"));
    for (String bad : List.of("a/b", "/a/../b", "/a/./b", "/a//b", "/", "/a\0b", "")) {
      assertThatThrownBy(() -> Validate.path("target_path", bad)).as(bad)
          .isInstanceOfSatisfying(CsiException.class, e -> assertThat(e.kind()).isEqualTo(CsiException.Kind.INVALID_ARGUMENT))
          .hasMessageContaining("target_path");
    }
  }

  @Test
  void pagesAreStableAndTokensChecked() {
    List<String> ids = List.of("a", "b", "c", "d", "e");
    Pages.Page<String> p1 = Pages.page(ids, Function.identity(), 2, "");
    assertThat(p1.entries()).containsExactly("a", "b");
    Pages.Page<String> p2 = Pages.page(List.of("a", "c", "d", "e"), Function.identity(), 2, p1.nextToken());
    assertThat(p2.entries()).containsExactly("c", "d");
    Pages.Page<String> p3 = Pages.page(ids, Function.identity(), 2, p2.nextToken());
    assertThat(p3.entries()).containsExactly("e");
    assertThat(p3.nextToken()).isEmpty();
    assertThat(Pages.page(ids, Function.identity(), 0, "").entries()).hasSize(5);
    assertThatThrownBy(() -> Pages.page(ids, Function.identity(), 1, "%%%"))
        .isInstanceOfSatisfying(CsiException.class, e -> assertThat(e.kind()).isEqualTo(CsiException.Kind.ABORTED));
  }
}

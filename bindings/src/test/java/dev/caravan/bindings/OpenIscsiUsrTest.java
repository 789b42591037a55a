package dev.caravan.bindings;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.NativeLibraries.Library;
import dev.caravan.bindings.iscsi.OpenIscsiUsr;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class OpenIscsiUsrTest {

  @BeforeAll
  static void requireLibopeniscsiusr() {
    assumeTrue(
        NativeLibraries.isAvailable(Library.OPEN_ISCSI_USR),
        () -> NativeLibraries.status(Library.OPEN_ISCSI_USR).problem().orElse(""));
  }

  @Test
  void describesReturnCodes() {
    assertThat(OpenIscsiUsr.LIBISCSI_OK()).isZero();
    assertThat(OpenIscsiUsr.iscsi_strerror(OpenIscsiUsr.LIBISCSI_OK()).getString(0))
        .isEqualTo("OK");
    assertThat(OpenIscsiUsr.iscsi_strerror(OpenIscsiUsr.LIBISCSI_ERR_SESS_NOT_FOUND()).getString(0))
        .containsIgnoringCase("session");
  }

  @Test
  void createsAndFreesAContext() {
    MemorySegment ctx = OpenIscsiUsr.iscsi_context_new();
    assertThat(ctx).isNotEqualTo(MemorySegment.NULL);
    try {
      OpenIscsiUsr.iscsi_context_log_priority_set(ctx, OpenIscsiUsr.LIBISCSI_LOG_PRIORITY_ERROR());
    } finally {
      OpenIscsiUsr.iscsi_context_free(ctx);
    }
  }
}

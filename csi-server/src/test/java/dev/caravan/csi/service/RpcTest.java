package dev.caravan.csi.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RpcTest {
  /** What a service method answered: its errors and values, in order. */
  private static final class Answer implements StreamObserver<String> {
    final List<Object> seen = new ArrayList<>();

    @Override
    public void onNext(String value) {
      seen.add(value);
    }

    @Override
    public void onError(Throwable t) {
      seen.add(Status.fromThrowable(t));
    }

    @Override
    public void onCompleted() {
      seen.add("completed");
    }
  }

  @Test
  void anUnexpectedFailureIsInternalWithItsMessageAndNoJavaClassName() {
    Answer npe = new Answer();
    Rpc.unary(npe, () -> {
      throw new NullPointerException();
    });
    assertThat(npe.seen).singleElement().isInstanceOfSatisfying(Status.class, s -> {
      assertThat(s.getCode()).isEqualTo(Status.Code.INTERNAL);
      assertThat(s.getDescription()).isEqualTo(
          "internal error: a failure that gave no reason (the plugin's log has its stack trace)");
    });

    Answer said = new Answer();
    Rpc.unary(said, () -> {
      throw new IllegalStateException("the journal directory /var/lib/caravan/journal is not writable");
    });
    assertThat(said.seen).singleElement().isInstanceOfSatisfying(Status.class, s ->
        assertThat(s.getDescription()).isEqualTo(
            "internal error: the journal directory /var/lib/caravan/journal is not writable"));

    Answer fine = new Answer();
    Rpc.unary(fine, () -> "ok");
    assertThat(fine.seen).containsExactly("ok", "completed");
  }
}

package dev.caravan.csi.peer;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.function.BiConsumer;

/** Calls a unary gRPC service method in this process and returns its answer or throws its status. */
final class InProcess {
  private InProcess() {}

  static <Q, R> R call(BiConsumer<Q, StreamObserver<R>> method, Q request) {
    Capture<R> c = new Capture<>();
    method.accept(request, c);
    return c.result();
  }

  private static final class Capture<R> implements StreamObserver<R> {
    private R value;
    private Throwable error;

    @Override
    public void onNext(R v) {
      value = v;
    }

    @Override
    public void onError(Throwable t) {
      error = t;
    }

    @Override
    public void onCompleted() {}

    R result() {
      if (error instanceof StatusRuntimeException e) {
        throw e;
      }
      if (error != null) {
        throw Status.fromThrowable(error).asRuntimeException();
      }
      if (value == null) {
        throw Status.INTERNAL.withDescription("the call completed without an answer").asRuntimeException();
      }
      return value;
    }
  }
}

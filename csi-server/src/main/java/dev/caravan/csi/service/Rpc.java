package dev.caravan.csi.service;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.support.Failures;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.function.Supplier;

/** Runs one unary call body and maps its failures to gRPC statuses. */
public final class Rpc {
  private static final System.Logger LOG = System.getLogger(Rpc.class.getName());

  private Rpc() {}

  public static <T> void unary(StreamObserver<T> observer, Supplier<T> body) {
    T response;
    try {
      response = body.get();
    } catch (CsiException e) {
      observer.onError(status(e).asRuntimeException());
      return;
    } catch (StatusRuntimeException e) {
      observer.onError(e);
      return;
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "unexpected failure", e);
      observer.onError(Status.INTERNAL.withDescription(Failures.internal(e)).asRuntimeException());
      return;
    }
    observer.onNext(response);
    observer.onCompleted();
  }

  public static Status status(CsiException e) {
    Status.Code code =
        switch (e.kind()) {
          case INVALID_ARGUMENT -> Status.Code.INVALID_ARGUMENT;
          case NOT_FOUND -> Status.Code.NOT_FOUND;
          case ALREADY_EXISTS -> Status.Code.ALREADY_EXISTS;
          case OUT_OF_RANGE -> Status.Code.OUT_OF_RANGE;
          case FAILED_PRECONDITION -> Status.Code.FAILED_PRECONDITION;
          case ABORTED -> Status.Code.ABORTED;
          case RESOURCE_EXHAUSTED -> Status.Code.RESOURCE_EXHAUSTED;
          case UNAVAILABLE -> Status.Code.UNAVAILABLE;
          case UNIMPLEMENTED -> Status.Code.UNIMPLEMENTED;
          case UNAUTHENTICATED -> Status.Code.UNAUTHENTICATED;
          case INTERNAL -> Status.Code.INTERNAL;
        };
    return Status.fromCode(code).withDescription(e.getMessage());
  }
}

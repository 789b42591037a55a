package dev.caravan.csi.testing;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.function.Executable;

/** What a gRPC call ended with, for tests that assert on status codes and messages. */
public final class GrpcOutcomes {
  private GrpcOutcomes() {}

  /** The call's status code: OK when it succeeded. */
  public static Status.Code code(Executable call) {
    try {
      call.execute();
    } catch (StatusRuntimeException e) {
      return e.getStatus().getCode();
    } catch (Throwable t) {
      throw new AssertionError("expected a gRPC error, got " + t, t);
    }
    return Status.Code.OK;
  }

  /** The gRPC error the call failed with; a call that succeeds fails the test. */
  public static StatusRuntimeException error(Executable call) {
    try {
      call.execute();
    } catch (StatusRuntimeException e) {
      return e;
    } catch (Throwable t) {
      throw new AssertionError("expected a gRPC error, got " + t, t);
    }
    throw new AssertionError("expected a gRPC error, the call succeeded");
  }
}

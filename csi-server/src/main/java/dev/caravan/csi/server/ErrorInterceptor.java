package dev.caravan.csi.server;

import dev.caravan.csi.support.Failures;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/**
 * The last line of defence: an exception escaping a service method becomes INTERNAL with a one-line
 * message ({@link Failures}: the stack trace and the class go to the log, never to the client).
 * Services normally map their own failures through {@link dev.caravan.csi.service.Rpc}.
 */
final class ErrorInterceptor implements ServerInterceptor {
  private static final System.Logger LOG = System.getLogger(ErrorInterceptor.class.getName());

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
      ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    ServerCall.Listener<ReqT> listener = next.startCall(call, headers);
    return new SimpleForwardingServerCallListener<>(listener) {
      @Override
      public void onHalfClose() {
        try {
          super.onHalfClose();
        } catch (StatusRuntimeException e) {
          closeQuietly(call, e.getStatus());
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.ERROR,
              "unexpected failure in " + call.getMethodDescriptor().getFullMethodName(), e);
          closeQuietly(call, Status.INTERNAL.withDescription(Failures.internal(e)));
        }
      }
    };
  }

  private static void closeQuietly(ServerCall<?, ?> call, Status status) {
    try {
      call.close(status, new Metadata());
    } catch (IllegalStateException alreadyClosed) {
      LOG.log(System.Logger.Level.DEBUG, "call already closed", alreadyClosed);
    }
  }
}

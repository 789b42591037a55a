package dev.caravan.csi.observe.metrics;

import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

/** Counts every RPC and times it, by method and final gRPC code. */
public final class MetricsInterceptor implements ServerInterceptor {
  private final Metrics metrics;

  public MetricsInterceptor(Metrics metrics) {
    this.metrics = metrics;
  }

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
      ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    long start = System.nanoTime();
    String method = call.getMethodDescriptor().getBareMethodName();
    return next.startCall(new SimpleForwardingServerCall<>(call) {
      @Override
      public void close(Status status, Metadata trailers) {
        metrics.rpc(method == null ? "unknown" : method, status.getCode().name(), System.nanoTime() - start);
        super.close(status, trailers);
      }
    }, headers);
  }
}

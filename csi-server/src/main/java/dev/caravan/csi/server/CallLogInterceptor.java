package dev.caravan.csi.server;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

/**
 * One structured log line per RPC: {@code rpc method=NodePublishVolume volume=v1 code=OK us=87}.
 * Only the method, the volume (or snapshot) id, the status and the duration are logged; request
 * bodies never are, so secrets (fields marked {@code csi_secret}) cannot leak. At DEBUG level the
 * request is logged with every secret field replaced by {@link Redaction}.
 */
final class CallLogInterceptor implements ServerInterceptor {
  private static final System.Logger LOG = System.getLogger("dev.caravan.csi.rpc");
  private static final String[] ID_FIELDS = {"volume_id", "source_volume_id", "snapshot_id", "name"};

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
      ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    long start = System.nanoTime();
    String method = call.getMethodDescriptor().getBareMethodName();
    String[] subject = {"-"};
    ServerCall<ReqT, RespT> logged =
        new SimpleForwardingServerCall<>(call) {
          @Override
          public void close(Status status, Metadata trailers) {
            long micros = (System.nanoTime() - start) / 1_000;
            if (status.isOk()) {
              LOG.log(System.Logger.Level.INFO, "rpc method={0} volume={1} code=OK us={2}",
                  method, subject[0], Long.toString(micros));
            } else {
              LOG.log(System.Logger.Level.INFO, "rpc method={0} volume={1} code={2} us={3} error=\"{4}\"",
                  method, subject[0], status.getCode(), Long.toString(micros),
                  String.valueOf(status.getDescription()));
            }
            super.close(status, trailers);
          }
        };
    ServerCall.Listener<ReqT> listener = next.startCall(logged, headers);
    return new SimpleForwardingServerCallListener<>(listener) {
      @Override
      public void onMessage(ReqT message) {
        if (message instanceof Message m) {
          subject[0] = subjectOf(m);
          if (LOG.isLoggable(System.Logger.Level.DEBUG)) {
            LOG.log(System.Logger.Level.DEBUG, "rpc method={0} request={1}",
                method, Redaction.redact(m).toString().replace('\n', ' '));
          }
        }
        super.onMessage(message);
      }
    };
  }

  /** The id the call is about, for the log line; "-" when the request names none. */
  static String subjectOf(Message m) {
    for (String name : ID_FIELDS) {
      FieldDescriptor field = m.getDescriptorForType().findFieldByName(name);
      if (field != null && field.getType() == FieldDescriptor.Type.STRING && !field.isRepeated()) {
        String value = (String) m.getField(field);
        if (!value.isEmpty()) {
          return sanitize(value);
        }
      }
    }
    return "-";
  }

  /** Keeps log lines single-line and bounded whatever the client sent. */
  private static String sanitize(String value) {
    String v = value.length() > 128 ? value.substring(0, 128) + "..." : value;
    StringBuilder out = new StringBuilder(v.length());
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      out.append(Character.isISOControl(c) || c == ' ' || c == '"' ? '?' : c);
    }
    return out.toString();
  }
}

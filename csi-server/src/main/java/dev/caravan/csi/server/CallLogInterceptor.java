package dev.caravan.csi.server;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One structured log line per RPC: {@code rpc method=NodePublishVolume volume=v1 code=OK us=87}.
 * Only the method, the volume (or snapshot) id, the status and the duration are logged; request
 * bodies never are, so secrets (fields marked {@code csi_secret}) cannot leak. At DEBUG level the
 * request is logged with every secret field replaced by {@link Redaction}.
 */
final class CallLogInterceptor implements ServerInterceptor {
  private static final System.Logger LOG = System.getLogger("dev.caravan.csi.rpc");
  // The same logger through java.util.logging (System.Logger's backend here), for logp.
  private static final Logger LINES = Logger.getLogger("dev.caravan.csi.rpc");
  // The id field of each request type, looked up once per type instead of by name on every call.
  private static final Map<Descriptor, List<FieldDescriptor>> SUBJECT_FIELDS = new ConcurrentHashMap<>();
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
            // The response goes first: writing the line is not part of the call's latency.
            super.close(status, trailers);
            if (LINES.isLoggable(Level.INFO)) {
              String line = "rpc method=" + method + " volume=" + subject[0] + " code=" + status.getCode()
                  + " us=" + micros
                  + (status.isOk() ? "" : " error=\"" + status.getDescription() + "\"");
              // logp names the source, so the handler's formatter does not walk the stack to find it.
              LINES.logp(Level.INFO, CallLogInterceptor.class.getName(), "close", line);
            }
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
    for (FieldDescriptor field : SUBJECT_FIELDS.computeIfAbsent(m.getDescriptorForType(), CallLogInterceptor::idFields)) {
      String value = (String) m.getField(field);
      if (!value.isEmpty()) {
        return sanitize(value);
      }
    }
    return "-";
  }

  private static List<FieldDescriptor> idFields(Descriptor type) {
    List<FieldDescriptor> fields = new ArrayList<>();
    for (String name : ID_FIELDS) {
      FieldDescriptor field = type.findFieldByName(name);
      if (field != null && field.getType() == FieldDescriptor.Type.STRING && !field.isRepeated()) {
        fields.add(field);
      }
    }
    return List.copyOf(fields);
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

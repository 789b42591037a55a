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

/**
 * One structured log line per RPC: {@code rpc method=NodePublishVolume volume=v1 code=OK us=87}.
 * Only the method, the volume (or snapshot) id, the status and the duration are logged; request
 * bodies never are, so secrets (fields marked {@code csi_secret}) cannot leak. At DEBUG level the
 * request is logged with every secret field replaced by {@link Redaction}.
 *
 * <p>The call itself only notes the parts (a timestamp, the method, the raw id, the code, the
 * duration) and hands them to {@link RpcLog} after the response has gone out; building, sanitizing
 * and writing the line happen on the log's own thread, off the call's (possibly the event loop).
 */
final class CallLogInterceptor implements ServerInterceptor {
  private static final System.Logger LOG = System.getLogger("dev.caravan.csi.rpc");
  // The id field of each request type, looked up once per type instead of by name on every call.
  private static final Map<Descriptor, List<FieldDescriptor>> SUBJECT_FIELDS = new ConcurrentHashMap<>();
  private static final String[] ID_FIELDS = {"volume_id", "source_volume_id", "snapshot_id", "name"};

  private final RpcLog log;

  CallLogInterceptor(RpcLog log) {
    this.log = log;
  }

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
      ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    Logged<ReqT, RespT> logged = new Logged<>(call, System.nanoTime(), log);
    ServerCall.Listener<ReqT> listener = next.startCall(logged, headers);
    return new SimpleForwardingServerCallListener<>(listener) {
      @Override
      public void onMessage(ReqT message) {
        if (message instanceof Message m) {
          logged.subject = rawSubjectOf(m);
          if (LOG.isLoggable(System.Logger.Level.DEBUG)) {
            LOG.log(System.Logger.Level.DEBUG, "rpc method={0} request={1}",
                logged.method(), Redaction.redact(m).toString().replace('\n', ' '));
          }
        }
        super.onMessage(message);
      }
    };
  }

  /** The call as the service sees it: notes the line's parts when it closes. */
  private static final class Logged<ReqT, RespT> extends SimpleForwardingServerCall<ReqT, RespT> {
    private final long start;
    private final RpcLog log;
    // Written by onMessage, read by close: gRPC runs a call's callbacks one at a time, in order.
    private String subject;

    Logged(ServerCall<ReqT, RespT> call, long start, RpcLog log) {
      super(call);
      this.start = start;
      this.log = log;
    }

    String method() {
      return getMethodDescriptor().getBareMethodName();
    }

    @Override
    public void close(Status status, Metadata trailers) {
      long micros = (System.nanoTime() - start) / 1_000;
      // The line is queued before the response goes: once a client has its answer, the line of that
      // call is ahead of the line of any call it sends next. Queuing is an offer to the log's queue,
      // the writing happens on the log's own thread.
      if (RpcLog.enabled()) {
        // The full name is a field of the descriptor; the bare one is cut from it on the log's thread.
        log.add(new RpcLog.Line(System.currentTimeMillis(), getMethodDescriptor().getFullMethodName(), subject,
            status.getCode(), micros,
            status.isOk() ? null : status.getDescription()));
      }
      super.close(status, trailers);
    }
  }

  /** The id the call is about, sanitized for the log line; "-" when the request names none. */
  static String subjectOf(Message m) {
    String raw = rawSubjectOf(m);
    return raw == null ? "-" : RpcLog.sanitize(raw);
  }

  /** The id the call is about as the client sent it; null when the request names none. */
  private static String rawSubjectOf(Message m) {
    for (FieldDescriptor field : SUBJECT_FIELDS.computeIfAbsent(m.getDescriptorForType(), CallLogInterceptor::idFields)) {
      String value = (String) m.getField(field);
      if (!value.isEmpty()) {
        return value;
      }
    }
    return null;
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
}

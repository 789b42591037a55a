package dev.caravan.csi.server;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import dev.caravan.csi.v1.CsiProto;
import java.util.List;
import java.util.Map;

/**
 * Produces a copy of a request safe to log: every field carrying the {@code csi_secret} option is
 * cleared and replaced, for maps, by the same keys with the value {@code <redacted>}; nested messages
 * are redacted recursively.
 */
public final class Redaction {
  public static final String REDACTED = "<redacted>";

  private Redaction() {}

  public static Message redact(Message message) {
    Message.Builder builder = message.toBuilder();
    for (Map.Entry<FieldDescriptor, Object> e : message.getAllFields().entrySet()) {
      FieldDescriptor field = e.getKey();
      if (field.getOptions().getExtension(CsiProto.csiSecret)) {
        builder.clearField(field);
        if (field.isMapField()) {
          for (Object entry : (List<?>) e.getValue()) {
            Message m = (Message) entry;
            Message.Builder eb = m.toBuilder();
            FieldDescriptor value = m.getDescriptorForType().findFieldByName("value");
            eb.setField(value, REDACTED);
            builder.addRepeatedField(field, eb.build());
          }
        }
      } else if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE && !field.isMapField()) {
        if (field.isRepeated()) {
          builder.clearField(field);
          for (Object item : (List<?>) e.getValue()) {
            builder.addRepeatedField(field, redact((Message) item));
          }
        } else {
          builder.setField(field, redact((Message) e.getValue()));
        }
      }
    }
    return builder.build();
  }
}

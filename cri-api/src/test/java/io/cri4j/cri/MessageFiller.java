package io.cri4j.cri;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import java.util.List;

/** Fills every field of a message (recursively, two elements per repeated field and map). */
final class MessageFiller {

    private static final int MAX_DEPTH = 6;

    private MessageFiller() {}

    static Message filled(Message prototype) {
        return fill(prototype.newBuilderForType(), 0, 1).build();
    }

    private static Message.Builder fill(Message.Builder b, int depth, int seed) {
        Descriptor d = b.getDescriptorForType();
        for (FieldDescriptor f : d.getFields()) {
            if (f.isRepeated()) {
                for (int i = 0; i < 2; i++) {
                    Object v = value(b, f, depth, seed * 31 + f.getNumber() * 7 + i);
                    if (v != null) {
                        b.addRepeatedField(f, v);
                    }
                }
            } else {
                Object v = value(b, f, depth, seed * 31 + f.getNumber());
                if (v != null) {
                    b.setField(f, v);
                }
            }
        }
        return b;
    }

    private static Object value(Message.Builder parent, FieldDescriptor f, int depth, int seed) {
        switch (f.getJavaType()) {
            case INT:
                return seed;
            case LONG:
                return 1_000_000_000_000L + seed;
            case FLOAT:
                return seed + 0.5f;
            case DOUBLE:
                return seed + 0.25;
            case BOOLEAN:
                return true;
            case STRING:
                return f.getName() + "-" + seed;
            case BYTE_STRING:
                return ByteString.copyFromUtf8("bytes-" + seed);
            case ENUM:
                {
                    EnumDescriptor e = f.getEnumType();
                    List<?> values = e.getValues();
                    return e.getValues()
                            .get(
                                    values.size()
                                            - 1
                                            - Math.floorMod(seed, Math.max(1, values.size() - 1)));
                }
            case MESSAGE:
                if (depth >= MAX_DEPTH) {
                    return null;
                }
                return fill(parent.newBuilderForField(f), depth + 1, seed).build();
            default:
                throw new IllegalStateException(f.getFullName());
        }
    }
}

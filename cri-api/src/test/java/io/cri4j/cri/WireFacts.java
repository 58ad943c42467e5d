package io.cri4j.cri;

import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * Produces the wire-facts lines (the format of {@code shared/cri-wire-facts/README.md}) from a
 * compiled file descriptor: every field, map entry, enum value and RPC signature.
 */
final class WireFacts {

    private WireFacts() {}

    static List<String> of(FileDescriptor file) {
        TreeSet<String> lines = new TreeSet<>();
        for (Descriptor m : file.getMessageTypes()) {
            message(m, lines);
        }
        for (EnumDescriptor e : file.getEnumTypes()) {
            enumeration(e, lines);
        }
        for (ServiceDescriptor s : file.getServices()) {
            for (MethodDescriptor m : s.getMethods()) {
                lines.add(
                        "rpc "
                                + s.getFullName()
                                + "/"
                                + m.getName()
                                + " ."
                                + m.getInputType().getFullName()
                                + " -> ."
                                + m.getOutputType().getFullName()
                                + " cs="
                                + m.isClientStreaming()
                                + " ss="
                                + m.isServerStreaming());
            }
        }
        return new ArrayList<>(lines);
    }

    private static void message(Descriptor m, TreeSet<String> lines) {
        if (m.getOptions().getMapEntry()) {
            lines.add("mapentry " + m.getFullName());
        }
        for (FieldDescriptor f : m.getFields()) {
            FieldDescriptorProto p = f.toProto();
            StringBuilder line =
                    new StringBuilder("field ")
                            .append(f.getFullName())
                            .append(" = ")
                            .append(f.getNumber())
                            .append(' ')
                            .append(p.getLabel().name())
                            .append(' ')
                            .append(p.getType().name());
            if (p.hasTypeName()) {
                line.append(' ').append(p.getTypeName());
            }
            if (p.hasOneofIndex()) {
                line.append(" oneof").append(p.getOneofIndex());
            }
            lines.add(line.toString());
        }
        for (Descriptor nested : m.getNestedTypes()) {
            message(nested, lines);
        }
        for (EnumDescriptor e : m.getEnumTypes()) {
            enumeration(e, lines);
        }
    }

    private static void enumeration(EnumDescriptor e, TreeSet<String> lines) {
        for (EnumValueDescriptor v : e.getValues()) {
            lines.add("enum " + e.getFullName() + "." + v.getName() + " = " + v.getNumber());
        }
    }
}

package io.cri4j.hook;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Wire facts (the format of {@code shared/wire-facts/README.md}: one line per field, map entry,
 * enum value and RPC signature) made from a compiled descriptor, and read from the upstream facts
 * files kept in the test resources.
 */
public final class WireFacts {
    private WireFacts() {}

    /** The sorted facts of the upstream file {@code name} kept in {@code /wire-facts/}. */
    public static List<String> upstream(String name) throws IOException {
        try (InputStream in = WireFacts.class.getResourceAsStream("/wire-facts/" + name)) {
            return Arrays.stream(new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n"))
                    .filter(l -> !l.isBlank())
                    .sorted()
                    .toList();
        }
    }

    /**
     * The project's shared copy of the upstream facts ({@code ../shared/wire-facts/NAME} beside the
     * checkout), or empty where the checkout has no {@code shared/} beside it.
     */
    static Optional<Path> shared(String name) {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path p = dir.resolve("shared/wire-facts").resolve(name);
            if (Files.isRegularFile(p)) {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }

    /** The sorted facts of {@code file}. */
    public static List<String> of(FileDescriptor file) {
        List<String> out = new ArrayList<>();
        for (Descriptor d : file.getMessageTypes()) {
            message(d, out);
        }
        for (EnumDescriptor e : file.getEnumTypes()) {
            enumFacts(e, out);
        }
        for (ServiceDescriptor s : file.getServices()) {
            for (MethodDescriptor m : s.getMethods()) {
                out.add(
                        "rpc "
                                + s.getFullName()
                                + "/"
                                + m.getName()
                                + " ."
                                + m.getInputType().getFullName()
                                + " -> ."
                                + m.getOutputType().getFullName()
                                + " cs="
                                + m.toProto().getClientStreaming()
                                + " ss="
                                + m.toProto().getServerStreaming());
            }
        }
        out.sort(null);
        return out;
    }

    private static void message(Descriptor d, List<String> out) {
        if (d.getOptions().getMapEntry()) {
            out.add("mapentry " + d.getFullName());
        }
        for (FieldDescriptor f : d.getFields()) {
            StringBuilder sb =
                    new StringBuilder("field ")
                            .append(d.getFullName())
                            .append('.')
                            .append(f.getName())
                            .append(" = ")
                            .append(f.getNumber())
                            .append(' ')
                            .append(f.toProto().getLabel().name())
                            .append(' ')
                            .append(f.toProto().getType().name());
            if (f.getType() == FieldDescriptor.Type.MESSAGE
                    || f.getType() == FieldDescriptor.Type.ENUM) {
                sb.append(" .")
                        .append(
                                f.getType() == FieldDescriptor.Type.MESSAGE
                                        ? f.getMessageType().getFullName()
                                        : f.getEnumType().getFullName());
            }
            if (f.getRealContainingOneof() != null) {
                sb.append(" oneof").append(f.getRealContainingOneof().getIndex());
            }
            out.add(sb.toString());
        }
        for (Descriptor n : d.getNestedTypes()) {
            message(n, out);
        }
        for (EnumDescriptor e : d.getEnumTypes()) {
            enumFacts(e, out);
        }
    }

    private static void enumFacts(EnumDescriptor e, List<String> out) {
        for (EnumValueDescriptor v : e.getValues()) {
            out.add("enum " + e.getFullName() + "." + v.getName() + " = " + v.getNumber());
        }
    }
}

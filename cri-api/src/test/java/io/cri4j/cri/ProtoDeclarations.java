package io.cri4j.cri;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the declarations of a .proto file in the layout {@code tools/proto-from-facts.py} writes,
 * each with the {@code //} comment lines right above it (the leading comment protoc attaches to
 * the element and turns into Javadoc), and lists the elements a compiled descriptor has, named
 * the same way: {@code pkg.Message}, {@code pkg.Message.field}, {@code pkg.Enum.VALUE},
 * {@code pkg.Service}, {@code pkg.Service/Rpc}.
 */
final class ProtoDeclarations {

    private static final Pattern PACKAGE = Pattern.compile("package\\s+([\\w.]+)\\s*;");
    private static final Pattern BLOCK = Pattern.compile("(service|message|enum)\\s+(\\w+)\\s*\\{");
    private static final Pattern RPC = Pattern.compile("rpc\\s+(\\w+)\\s*\\(.*");
    private static final Pattern FIELD =
            Pattern.compile(
                    "(?:repeated\\s+)?(?:map<[^>]+>|[.\\w]+)\\s+(\\w+)\\s*=\\s*\\d+\\s*(?:\\[.*])?;");
    private static final Pattern ENUM_VALUE =
            Pattern.compile("(\\w+)\\s*=\\s*-?\\d+\\s*(?:\\[.*])?;");

    private ProtoDeclarations() {}

    /** Every declared element by full name, with its leading comment text ("" if it has none). */
    static Map<String, String> comments(List<String> lines) {
        Map<String, String> result = new TreeMap<>();
        Deque<String[]> scopes = new ArrayDeque<>(); // {kind, full name}
        String pkg = null;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            Matcher m;
            String name = null;
            if ((m = PACKAGE.matcher(line)).matches()) {
                pkg = m.group(1);
            } else if ((m = BLOCK.matcher(line)).matches()) {
                String parent = scopes.isEmpty() ? pkg : scopes.peek()[1];
                name = parent + "." + m.group(2);
                scopes.push(new String[] {m.group(1), name});
            } else if (line.equals("}")) {
                scopes.pop();
            } else if (scopes.isEmpty()
                    || line.isEmpty()
                    || line.startsWith("//")
                    || line.startsWith("option ")) {
                continue;
            } else if (scopes.peek()[0].equals("service") && (m = RPC.matcher(line)).matches()) {
                name = scopes.peek()[1] + "/" + m.group(1);
            } else if (scopes.peek()[0].equals("message") && (m = FIELD.matcher(line)).matches()) {
                name = scopes.peek()[1] + "." + m.group(1);
            } else if (scopes.peek()[0].equals("enum")
                    && (m = ENUM_VALUE.matcher(line)).matches()) {
                name = scopes.peek()[1] + "." + m.group(1);
            } else {
                throw new IllegalArgumentException(
                        "line " + (i + 1) + " is no declaration this reader knows: " + line);
            }
            if (name != null) {
                result.put(name, leadingComment(lines, i));
            }
        }
        return result;
    }

    private static String leadingComment(List<String> lines, int declaration) {
        StringBuilder text = new StringBuilder();
        for (int i = declaration - 1; i >= 0 && lines.get(i).strip().startsWith("//"); i--) {
            text.insert(0, lines.get(i).strip().substring(2).strip() + " ");
        }
        return text.toString().strip();
    }

    /** Every service, RPC, message, field, enum and enum value of a compiled file, by full name. */
    static TreeSet<String> elements(FileDescriptor file) {
        TreeSet<String> names = new TreeSet<>();
        for (ServiceDescriptor s : file.getServices()) {
            names.add(s.getFullName());
            for (MethodDescriptor m : s.getMethods()) {
                names.add(s.getFullName() + "/" + m.getName());
            }
        }
        file.getMessageTypes().forEach(m -> message(m, names));
        file.getEnumTypes().forEach(e -> enumeration(e, names));
        return names;
    }

    private static void message(Descriptor m, TreeSet<String> names) {
        if (m.getOptions().getMapEntry()) {
            return; // declared as a map<k, v> field, not as a message
        }
        names.add(m.getFullName());
        for (FieldDescriptor f : m.getFields()) {
            names.add(f.getFullName());
        }
        m.getNestedTypes().forEach(n -> message(n, names));
        m.getEnumTypes().forEach(e -> enumeration(e, names));
    }

    private static void enumeration(EnumDescriptor e, TreeSet<String> names) {
        names.add(e.getFullName());
        for (EnumValueDescriptor v : e.getValues()) {
            names.add(e.getFullName() + "." + v.getName());
        }
    }
}

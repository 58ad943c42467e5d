/*
 * Writes Java sources that repeat a piece of code once per RPC of a .proto's services: the typed
 * interceptor bases of hook-api (ForwardingCriInterceptor, ForwardingAsyncCriInterceptor) from
 * cri-api's runtime/v1/api.proto. The build runs it (hook-api/pom.xml, phase generate-sources);
 * its output goes to target/generated-sources and is never committed or edited.
 *
 * usage: java tools/ExpandRpcTemplates.java --proto FILE --templates DIR --package JAVA_PACKAGE --out DIR
 *
 * Every DIR/*.java.in is a template that becomes OUT/<package as path>/*.java. A template is Java
 * source with these additions:
 *   //# ...               a comment of the template's own, not written out
 *   ${package}            the --package argument (the generated classes' package: one parameter)
 *   //@rpc KIND ... //@end
 *                         the lines between are written once per RPC of KIND (unary,
 *                         server-streaming or all), in the proto's order of services and RPCs;
 *                         within them ${service} (RuntimeService), ${Rpc} (CreateContainer),
 *                         ${rpc} (createContainer), ${Request} and ${Response} (the Java simple
 *                         names of the messages) and ${doc} (the RPC's comment in the proto,
 *                         escaped for Javadoc) are replaced; a comment line (" * ...") they make
 *                         longer than 100 columns is wrapped.
 *   imports               the template's import lines and one per message class an expanded block
 *                         names (the proto's java_package) are written, sorted, where the first
 *                         import line of the template is.
 * A template line containing an unknown ${...} is an error, as are client- or bidi-streaming RPCs
 * (no kind names them) and message types from another proto package.
 *
 * The proto is read as tools/proto-from-facts.py writes it: "service NAME {", "  // comment" lines
 * before each "  rpc NAME(.pkg.Request) returns ([stream ].pkg.Response) {}", and "}". Files in OUT
 * that no template produces are deleted (a renamed package leaves no stale class behind); files
 * whose content is unchanged are not written again (javac's staleness check keeps working).
 *
 * Why a single-file Java program run by the JDK's source launcher (exec-maven-plugin runs
 * `${java.home}/bin/java tools/ExpandRpcTemplates.java ...`): the JDK is the one tool every build of
 * this project already has, so the generator runs offline on a fresh machine with nothing to
 * install (python3, which runs tools/proto-from-facts.py, is only a test dependency of cri-api);
 * there is no build-tools module to compile and install before hook-api (a protoc plugin would be
 * one: protobuf-maven-plugin resolves JVM plugins as artifacts from a repository, not from the
 * reactor); and exec-maven-plugin's sourceRoot registers the output as a source root, so javac,
 * the sources jar and the Javadoc jar all see the generated classes with no further plugin.
 * No dependency outside java.base.
 */
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

public class ExpandRpcTemplates {
    private static final int WIDTH = 100;
    private static final Pattern JAVA_PACKAGE =
            Pattern.compile("^option java_package = \"([\\w.]+)\";$");
    private static final Pattern PACKAGE = Pattern.compile("^package ([\\w.]+);$");
    private static final Pattern SERVICE = Pattern.compile("^service (\\w+) \\{$");
    private static final Pattern COMMENT = Pattern.compile("^  // ?(.*)$");
    private static final Pattern RPC =
            Pattern.compile(
                    "^  rpc (\\w+)\\((stream )?\\.?([\\w.]+)\\) returns \\((stream )?\\.?([\\w.]+)\\)"
                            + " \\{\\}$");
    private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{(\\w+)\\}");
    private static final Set<String> KINDS = Set.of("unary", "server-streaming", "all");

    record Rpc(
            String service,
            String name,
            String request,
            String response,
            boolean serverStreaming,
            String doc) {
        boolean is(String kind) {
            return kind.equals("all") || kind.equals(serverStreaming ? "server-streaming" : "unary");
        }
    }

    record Proto(String javaPackage, List<Rpc> rpcs) {}

    public static void main(String[] args) throws IOException {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                usage("bad argument " + args[i]);
            }
            opts.put(args[i].substring(2), args[i + 1]);
        }
        for (String required : List.of("proto", "templates", "package", "out")) {
            if (!opts.containsKey(required)) {
                usage("missing --" + required);
            }
        }
        String pkg = opts.get("package");
        if (!pkg.matches("[a-z_][\\w]*(\\.[a-z_][\\w]*)*")) {
            usage("--package " + pkg + " is not a Java package name");
        }
        Path protoFile = Path.of(opts.get("proto"));
        Proto proto = readProto(protoFile);
        Path templates = Path.of(opts.get("templates"));
        Path out = Path.of(opts.get("out"));
        Path dir = out.resolve(pkg.replace('.', '/'));
        Set<Path> written = new HashSet<>();
        List<Path> inputs;
        try (Stream<Path> s = Files.list(templates)) {
            inputs = s.filter(p -> p.toString().endsWith(".java.in")).sorted().toList();
        }
        if (inputs.isEmpty()) {
            fail(templates + ": no *.java.in template");
        }
        for (Path template : inputs) {
            String name = template.getFileName().toString();
            String header =
                    "// Generated by tools/ExpandRpcTemplates.java from "
                            + template
                            + "\n// and the RPCs of "
                            + protoFile
                            + ". Do not edit: edit the template (or the proto) and build.\n";
            String text = header + expand(template, Files.readAllLines(template), pkg, proto);
            Path target = dir.resolve(name.substring(0, name.length() - ".in".length()));
            Files.createDirectories(dir);
            if (!Files.exists(target) || !Files.readString(target).equals(text)) {
                Files.writeString(target, text, StandardCharsets.UTF_8);
            }
            written.add(target.toAbsolutePath().normalize());
        }
        if (Files.isDirectory(out)) {
            try (Stream<Path> s = Files.walk(out)) {
                s.filter(Files::isRegularFile)
                        .filter(p -> !written.contains(p.toAbsolutePath().normalize()))
                        .forEach(ExpandRpcTemplates::delete);
            }
        }
    }

    private static void delete(Path p) {
        try {
            Files.delete(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Proto readProto(Path file) throws IOException {
        String javaPackage = null;
        String protoPackage = null;
        String service = null;
        List<String> comment = new ArrayList<>();
        List<Rpc> rpcs = new ArrayList<>();
        int number = 0;
        for (String line : Files.readAllLines(file)) {
            number++;
            String where = file + ":" + number + ": ";
            Matcher m;
            if ((m = JAVA_PACKAGE.matcher(line)).matches()) {
                javaPackage = m.group(1);
            } else if ((m = PACKAGE.matcher(line)).matches()) {
                protoPackage = m.group(1);
            } else if ((m = SERVICE.matcher(line)).matches()) {
                service = m.group(1);
                comment.clear();
            } else if (service != null && (m = COMMENT.matcher(line)).matches()) {
                comment.add(m.group(1).trim());
            } else if (service != null && (m = RPC.matcher(line)).matches()) {
                if (m.group(2) != null) {
                    fail(where + "client-streaming RPC " + m.group(1) + ": no template kind for it");
                }
                String request = simpleName(m.group(3), protoPackage, where);
                String response = simpleName(m.group(5), protoPackage, where);
                rpcs.add(
                        new Rpc(
                                service,
                                m.group(1),
                                request,
                                response,
                                m.group(4) != null,
                                String.join(" ", comment)));
                comment.clear();
            } else if (service != null && line.equals("}")) {
                service = null;
            } else if (service != null && line.contains("rpc ")) {
                fail(where + "an RPC line this reader does not understand: " + line.trim());
            }
        }
        if (javaPackage == null) {
            fail(file + ": no option java_package");
        }
        if (rpcs.isEmpty()) {
            fail(file + ": no RPC");
        }
        return new Proto(javaPackage, rpcs);
    }

    private static String simpleName(String type, String protoPackage, String where) {
        String prefix = protoPackage + ".";
        if (protoPackage == null
                || !type.startsWith(prefix)
                || type.substring(prefix.length()).contains(".")) {
            fail(where + type + " is not a top-level message of package " + protoPackage);
        }
        return type.substring(prefix.length());
    }

    static String expand(Path template, List<String> lines, String pkg, Proto proto) {
        List<String> body = new ArrayList<>();
        Set<String> imports = new TreeSet<>();
        int importAt = -1;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            String where = template + ":" + (i + 1) + ": ";
            if (line.startsWith("import ")) {
                if (importAt < 0) {
                    importAt = body.size();
                }
                imports.add(line);
                continue;
            }
            String trimmed = line.trim();
            if (trimmed.startsWith("//#")) {
                continue;
            }
            if (trimmed.startsWith("//@rpc")) {
                String kind = trimmed.substring("//@rpc".length()).trim();
                if (!KINDS.contains(kind)) {
                    fail(where + "kind " + kind + " is none of " + KINDS);
                }
                int end = i + 1;
                while (end < lines.size() && !lines.get(end).trim().equals("//@end")) {
                    end++;
                }
                if (end == lines.size()) {
                    fail(where + "//@rpc without //@end");
                }
                List<String> block = lines.subList(i + 1, end);
                for (Rpc rpc : proto.rpcs()) {
                    if (!rpc.is(kind)) {
                        continue;
                    }
                    imports.add("import " + proto.javaPackage() + "." + rpc.request() + ";");
                    imports.add("import " + proto.javaPackage() + "." + rpc.response() + ";");
                    Map<String, String> values =
                            Map.of(
                                    "service", rpc.service(),
                                    "Rpc", rpc.name(),
                                    "rpc",
                                            Character.toLowerCase(rpc.name().charAt(0))
                                                    + rpc.name().substring(1),
                                    "Request", rpc.request(),
                                    "Response", rpc.response(),
                                    "doc", javadoc(rpc.doc()));
                    for (int j = 0; j < block.size(); j++) {
                        String expanded =
                                substitute(block.get(j), values, template + ":" + (i + 2 + j) + ": ");
                        body.addAll(wrap(expanded));
                    }
                }
                i = end;
                continue;
            }
            if (trimmed.equals("//@end")) {
                fail(where + "//@end without //@rpc");
            }
            body.add(substitute(line, Map.of("package", pkg), where));
        }
        if (importAt < 0) {
            fail(template + ": no import line (the generated imports go where the first one is)");
        }
        body.addAll(importAt, imports);
        return String.join("\n", body) + "\n";
    }

    private static String substitute(String line, Map<String, String> values, String where) {
        Matcher m = PLACEHOLDER.matcher(line);
        StringBuilder b = new StringBuilder();
        while (m.find()) {
            String value = values.get(m.group(1));
            if (value == null) {
                fail(where + "${" + m.group(1) + "} is not known here");
            }
            m.appendReplacement(b, Matcher.quoteReplacement(value));
        }
        m.appendTail(b);
        return b.toString();
    }

    /** The proto comment as Javadoc text: HTML and Javadoc's own characters escaped. */
    private static String javadoc(String doc) {
        if (doc.isEmpty()) {
            return "";
        }
        return doc.replace("&", "&amp;")
                .replace("<", "&lt;")
                .replace(">", "&gt;")
                .replace("@", "&#64;")
                .replace("*/", "*&#47;");
    }

    /** A comment line (" * ...") over WIDTH columns, wrapped at spaces with its own prefix. */
    private static List<String> wrap(String line) {
        Matcher m = Pattern.compile("^(\\s*\\* )(.*)$").matcher(line);
        if (line.length() <= WIDTH || !m.matches()) {
            return List.of(line.isBlank() ? "" : line.stripTrailing());
        }
        String prefix = m.group(1);
        List<String> out = new ArrayList<>();
        StringBuilder current = new StringBuilder(prefix);
        for (String word : m.group(2).split(" +")) {
            if (current.length() > prefix.length()
                    && current.length() + 1 + word.length() > WIDTH) {
                out.add(current.toString());
                current = new StringBuilder(prefix);
            }
            if (current.length() > prefix.length()) {
                current.append(' ');
            }
            current.append(word);
        }
        out.add(current.toString());
        return out;
    }

    private static void usage(String problem) {
        fail(
                problem
                        + "\nusage: java tools/ExpandRpcTemplates.java --proto FILE --templates DIR"
                        + " --package JAVA_PACKAGE --out DIR");
    }

    private static void fail(String message) {
        System.err.println("ExpandRpcTemplates: " + message);
        System.exit(1);
    }
}

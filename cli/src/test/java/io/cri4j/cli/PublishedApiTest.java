package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The public API of every published module, held against its listing in {@code api/ARTIFACT.txt}:
 * a change to what a user can compile against fails the build until the listing is written again
 * ({@code -Dcri4j.api.write=true}, which rewrites the listings and passes), so the change and its
 * listing go into one commit and a reviewer sees the API change as a diff.
 *
 * <p>Listed: the packages each module exports to everyone (its {@code module-info}); in them every
 * public type with its supertypes and its public and protected constructors, methods and fields.
 * A package generated from protos (no source of its own under {@code src/main/java}) lists its
 * type names only: its members follow the protos, which the wire-fact tests hold.
 */
class PublishedApiTest {

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern PUBLISHED =
            Pattern.compile(
                    "<groupId>io\\.cri4j</groupId><artifactId>(cri4j-[a-z0-9-]+)</artifactId>");

    @Test
    void everyPublishedModulesApiIsItsListing() throws Exception {
        boolean write = Boolean.getBoolean("cri4j.api.write");
        List<String> stale = new ArrayList<>();
        List<String> artifacts = published();
        assertThat(artifacts).contains("cri4j-cri-api", "cri4j-proxy-core");
        for (String artifact : artifacts) {
            String listing = listing(artifact);
            Path file = ROOT.resolve("api").resolve(artifact + ".txt");
            String before = Files.exists(file) ? Files.readString(file) : "";
            if (before.equals(listing)) {
                continue;
            }
            if (write) {
                Files.createDirectories(file.getParent());
                Files.writeString(file, listing);
            } else {
                stale.add(artifact + ": " + difference(before, listing));
            }
        }
        assertThat(stale)
                .as(
                        "the public API changed without its listing in api/; if the change is meant,"
                                + " write the listings again with mvn -pl cli -am test"
                                + " -Dtest=PublishedApiTest -Dsurefire.failIfNoSpecifiedTests=false"
                                + " -Dcri4j.api.write=true and commit them with it")
                .isEmpty();
    }

    /** The published modules' artifactIds, from cri4j-bom (as .ci/published.sh reads them). */
    private static List<String> published() throws IOException {
        Matcher m = PUBLISHED.matcher(Files.readString(ROOT.resolve("bom/pom.xml")));
        List<String> out = new ArrayList<>();
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    static String listing(String artifact) throws Exception {
        Path module = ROOT.resolve(artifact.substring("cri4j-".length()));
        Path classes = module.resolve("target/classes");
        ModuleDescriptor d =
                ModuleFinder.of(classes).findAll().stream()
                        .findFirst()
                        .orElseThrow(() -> new AssertionError("no module-info in " + classes))
                        .descriptor();
        StringBuilder b =
                new StringBuilder("# ")
                        .append(artifact)
                        .append(" (module ")
                        .append(d.name())
                        .append("): its public API, checked by cli's PublishedApiTest\n");
        Set<String> packages = new TreeSet<>();
        d.exports().stream().filter(e -> !e.isQualified()).forEach(e -> packages.add(e.source()));
        for (String pkg : packages) {
            boolean generated = !hasSources(module, pkg);
            b.append("\npackage ")
                    .append(pkg)
                    .append(generated ? " (generated from protos: type names only)" : "")
                    .append('\n');
            for (Class<?> c : types(classes, pkg)) {
                if (generated) {
                    b.append("  ").append(c.getName()).append('\n');
                } else {
                    describe(c, b);
                }
            }
        }
        return b.toString();
    }

    private static boolean hasSources(Path module, String pkg) throws IOException {
        Path dir = module.resolve("src/main/java").resolve(pkg.replace('.', '/'));
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.anyMatch(p -> p.toString().endsWith(".java"));
        }
    }

    /** The public types of a package (nested ones that a user can reach included), by name. */
    private static List<Class<?>> types(Path classes, String pkg) throws Exception {
        Path dir = classes.resolve(pkg.replace('.', '/'));
        List<Class<?>> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.sorted().toList()) {
                String file = p.getFileName().toString();
                if (!file.endsWith(".class") || file.equals("package-info.class")) {
                    continue;
                }
                Class<?> c =
                        Class.forName(
                                pkg + "." + file.substring(0, file.length() - ".class".length()),
                                false,
                                PublishedApiTest.class.getClassLoader());
                if (reachable(c)) {
                    out.add(c);
                }
            }
        }
        out.sort((x, y) -> x.getName().compareTo(y.getName()));
        return out;
    }

    private static boolean reachable(Class<?> c) {
        for (Class<?> k = c; k != null; k = k.getDeclaringClass()) {
            if (!Modifier.isPublic(k.getModifiers()) || k.isAnonymousClass() || k.isSynthetic()) {
                return false;
            }
        }
        return true;
    }

    private static void describe(Class<?> c, StringBuilder b) {
        b.append("  ").append(c.toGenericString());
        Type sup = c.getGenericSuperclass();
        if (sup != null && sup != Object.class && !c.isEnum() && !c.isRecord()) {
            b.append(" extends ").append(sup.getTypeName());
        }
        Type[] ifaces = c.getGenericInterfaces();
        if (ifaces.length > 0) {
            b.append(c.isInterface() ? " extends " : " implements ")
                    .append(
                            Arrays.stream(ifaces)
                                    .map(Type::getTypeName)
                                    .collect(Collectors.joining(", ")));
        }
        b.append('\n');
        Set<String> members = new TreeSet<>();
        for (Constructor<?> k : c.getDeclaredConstructors()) {
            add(k, k.toGenericString(), members);
        }
        for (Method m : c.getDeclaredMethods()) {
            if (!m.isBridge()) {
                add(m, m.toGenericString(), members);
            }
        }
        for (Field f : c.getDeclaredFields()) {
            add(f, f.toGenericString(), members);
        }
        for (String m : members) {
            b.append("    ").append(m).append('\n');
        }
    }

    private static void add(Member m, String text, Set<String> into) {
        int mod = m.getModifiers();
        boolean visible = Modifier.isPublic(mod) || Modifier.isProtected(mod);
        if (visible && !m.isSynthetic() && !(m instanceof Executable e && e.isSynthetic())) {
            // how a method locks is the implementation's, not the API's
            into.add(text.replace("synchronized ", ""));
        }
    }

    /** What the API gained and lost against its listing, a few lines of each. */
    private static String difference(String before, String now) {
        Set<String> listed = new TreeSet<>(Arrays.asList(before.split("\n")));
        Set<String> current = new TreeSet<>(Arrays.asList(now.split("\n")));
        List<String> added = current.stream().filter(l -> !listed.contains(l)).limit(5).toList();
        List<String> removed = listed.stream().filter(l -> !current.contains(l)).limit(5).toList();
        return "not listed: " + added + "; listed but gone: " + removed;
    }
}

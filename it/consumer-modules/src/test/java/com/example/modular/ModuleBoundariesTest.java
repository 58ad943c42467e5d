package com.example.modular;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import static java.nio.charset.StandardCharsets.UTF_8;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReader;
import java.lang.module.ModuleReference;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The published cri4j jars as modules: each is an explicit module, no internal package is exported
 * or opened to everyone (only to named cri4j modules, or to protobuf for reflection), and javac
 * refuses a module that reaches into any package not exported to it while it compiles one that
 * uses a public class of every exported package.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ModuleBoundariesTest {

    /** The modules of the artifacts cri4j-bom lists. */
    static final Set<String> PUBLISHED =
            Set.of(
                    "io.cri4j.cri",
                    "io.cri4j.hook",
                    "io.cri4j.proxy",
                    "io.cri4j.nri",
                    "io.cri4j.streaming",
                    "io.cri4j.imagepull",
                    "io.cri4j.testing");

    /** The prefix of the module names of Netty's native epoll jars (one per platform). */
    static final String NATIVE_EPOLL = "io.netty.transport.epoll.";

    @Test
    void everyPublishedJarIsAnExplicitModule() {
        Map<String, ModuleReference> jars = cri4jJars();
        assertEquals(new TreeSet<>(PUBLISHED), jars.keySet());
        jars.forEach(
                (name, ref) -> {
                    assertFalse(ref.descriptor().isAutomatic(), name + " has no module-info.class");
                    assertFalse(ref.descriptor().isOpen(), name + " is an open module");
                });
    }

    @Test
    void noInternalPackageIsExportedOrOpenedToEveryone() {
        List<String> wrong = new ArrayList<>();
        cri4jJars()
                .forEach(
                        (name, ref) -> {
                            for (ModuleDescriptor.Exports e : ref.descriptor().exports()) {
                                if (isInternal(e.source())
                                        && (!e.isQualified()
                                                || !e.targets().stream()
                                                        .allMatch(
                                                                t -> t.startsWith("io.cri4j.")))) {
                                    wrong.add(name + ": exports " + e);
                                }
                            }
                            for (ModuleDescriptor.Opens o : ref.descriptor().opens()) {
                                if (!o.isQualified()) {
                                    wrong.add(name + ": opens " + o);
                                }
                            }
                        });
        assertEquals(List.of(), wrong);
    }

    @Test
    void javacRefusesEveryPackageNotExportedToTheUser(@TempDir Path dir) throws Exception {
        Map<String, ModuleReference> jars = cri4jJars();
        Map<String, String> exported = new TreeMap<>(); // package -> a public class in it
        Map<String, String> hidden = new TreeMap<>();
        ClassLoader loader = ModuleBoundariesTest.class.getClassLoader();
        jars.values()
                .forEach(
                        ref -> {
                            Set<String> toAll =
                                    ref.descriptor().exports().stream()
                                            .filter(e -> !e.isQualified())
                                            .map(ModuleDescriptor.Exports::source)
                                            .collect(Collectors.toSet());
                            for (String pkg : ref.descriptor().packages()) {
                                Class<?> c = publicClassIn(ref, pkg, loader);
                                if (c != null) {
                                    (toAll.contains(pkg) ? exported : hidden).put(pkg, c.getName());
                                }
                            }
                        });
        assertTrue(
                hidden.keySet().stream().anyMatch(p -> p.startsWith("io.cri4j.proxy.internal")),
                hidden.toString());
        assertTrue(
                hidden.keySet().stream().anyMatch(p -> p.startsWith("io.cri4j.cri.internal")),
                hidden.toString());

        String requires =
                "requires io.cri4j.proxy; requires io.cri4j.nri; requires io.cri4j.testing;";
        Result uses = javac(dir.resolve("uses"), "com.example.uses", requires, fieldsOf(exported));
        assertEquals(0, uses.exit, uses.output);

        Result intrudes =
                javac(dir.resolve("intrudes"), "com.example.intrudes", requires, fieldsOf(hidden));
        assertNotEquals(0, intrudes.exit, intrudes.output);
        List<String> compiled = new ArrayList<>();
        int i = 0;
        for (String pkg : hidden.keySet()) {
            String file = "Uses" + i++ + ".java";
            // javac: "package io.cri4j.proxy.internal is not visible (... does not export it ...)"
            boolean refused =
                    intrudes.output
                            .lines()
                            .anyMatch(
                                    l ->
                                            l.contains(file + ":")
                                                    && l.contains("error:")
                                                    && l.contains(
                                                            "package " + pkg + " is not visible"));
            if (!refused) {
                compiled.add(pkg);
            }
        }
        assertEquals(List.of(), compiled, intrudes.output);
    }

    /**
     * Everything on the module path, cri-testing included (so the fake runtime reaches cri-api's
     * containerd content service through its qualified export): a program that starts the fake,
     * calls it and pulls an image from it with the image puller runs with {@code java -p ... -m}.
     * Netty's native epoll module is one nothing requires, so it is added by name.
     */
    @Test
    void aProgramRunsWithEveryModuleOnTheModulePath(@TempDir Path dir) throws Exception {
        Result compiled =
                javac(
                        dir,
                        "com.example.fake",
                        "requires io.cri4j.testing; requires io.cri4j.imagepull;",
                        Map.of(
                                "Main",
                                """
                        import io.cri4j.cri.CriChannels;
                        import io.cri4j.cri.CriEndpoint;
                        import io.cri4j.cri.v1.RuntimeServiceGrpc;
                        import io.cri4j.cri.v1.VersionRequest;
                        import io.cri4j.imagepull.CriImagePullBackend;
                        import io.cri4j.imagepull.ImagePuller;
                        import io.cri4j.imagepull.PullRequest;
                        import io.cri4j.testing.fake.FakeCriServer;
                        import java.nio.file.Path;
                        import java.util.concurrent.TimeUnit;

                        public final class Main {
                            public static void main(String[] args) throws Exception {
                                try (FakeCriServer fake = FakeCriServer.builder()
                                        .listen(CriEndpoint.unix(Path.of(args[0]))).build().start()) {
                                    var channel = CriChannels.newChannel(fake.endpoint());
                                    try {
                                        System.out.println("runtime " + RuntimeServiceGrpc.newBlockingStub(channel)
                                                .version(VersionRequest.getDefaultInstance()).getRuntimeName());
                                    } finally {
                                        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                                    }
                                    try (ImagePuller puller = ImagePuller.builder(
                                            CriImagePullBackend.builder(fake.endpoint()).build()).build()) {
                                        System.out.println("pulled " + puller.pull(PullRequest.of("registry.example:5000/app:1.2"))
                                                .result().get(30, TimeUnit.SECONDS).imageId());
                                    }
                                }
                            }
                        }
                        """));
        assertEquals(0, compiled.exit, compiled.output);
        String nativeEpoll =
                allJars().values().stream()
                        .map(r -> r.descriptor().name())
                        .filter(m -> m.startsWith(NATIVE_EPOLL))
                        .findFirst()
                        .orElseThrow(
                                () ->
                                        new AssertionError(
                                                "no Netty native epoll jar on the test's paths"));
        Result ran =
                run(
                        List.of(
                                tool("java"),
                                "--module-path",
                                dir.resolve("classes") + File.pathSeparator + modulePath(),
                                "--add-modules",
                                nativeEpoll,
                                "-m",
                                "com.example.fake/com.example.fake.Main",
                                dir.resolve("runtime.sock").toString()));
        assertEquals(0, ran.exit, ran.output);
        assertTrue(ran.output.lines().anyMatch(l -> l.startsWith("runtime ")), ran.output);
        assertTrue(ran.output.lines().anyMatch(l -> l.startsWith("pulled sha256:")), ran.output);
    }

    static boolean isInternal(String pkg) {
        return pkg.endsWith(".internal") || pkg.contains(".internal.");
    }

    /** A public top-level class of the package, or null (a package of resources only). */
    static Class<?> publicClassIn(ModuleReference ref, String pkg, ClassLoader loader) {
        String prefix = pkg.replace('.', '/') + "/";
        try (ModuleReader reader = ref.open();
                Stream<String> entries = reader.list()) {
            for (String entry :
                    entries.filter(
                                    e ->
                                            e.startsWith(prefix)
                                                    && e.endsWith(".class")
                                                    && e.indexOf('/', prefix.length()) < 0
                                                    && !e.contains("$")
                                                    && !e.endsWith("-info.class"))
                            .sorted()
                            .collect(Collectors.toList())) {
                Class<?> c =
                        Class.forName(
                                entry.substring(0, entry.length() - 6).replace('/', '.'),
                                false,
                                loader);
                if (Modifier.isPublic(c.getModifiers())) {
                    return c;
                }
            }
            return null;
        } catch (IOException | ClassNotFoundException e) {
            throw new AssertionError(ref.descriptor().name() + ": " + pkg, e);
        }
    }

    /** Every cri4j jar of the project, by module name. */
    static Map<String, ModuleReference> cri4jJars() {
        Map<String, ModuleReference> out = new TreeMap<>();
        for (ModuleReference ref : allJars().values()) {
            if (ref.descriptor().name().startsWith("io.cri4j.")) {
                out.put(ref.descriptor().name(), ref);
            }
        }
        return out;
    }

    /** Every jar of the project's test scope (the list the POM has maven-dependency-plugin write). */
    private static Map<Path, ModuleReference> allJars() {
        String file = System.getProperty("modulePathFile");
        assertNotNull(
                file, "system property modulePathFile (set in the POM's surefire configuration)");
        Map<Path, ModuleReference> out = new LinkedHashMap<>();
        try {
            for (String entry : Files.readString(Path.of(file)).strip().split(File.pathSeparator)) {
                Path jar = Path.of(entry);
                ModuleFinder.of(jar).findAll().forEach(ref -> out.put(jar, ref));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    /** The project's jars (the cri4j modules, what they require, JUnit's) as a module path. */
    private static String modulePath() {
        return allJars().keySet().stream()
                .map(Path::toString)
                .collect(Collectors.joining(File.pathSeparator));
    }

    private record Result(int exit, String output) {}

    /** Compiles the module {@code name} from {@code sources} (class name to source) against the project's jars. */
    private static Result javac(Path dir, String name, String requires, Map<String, String> sources)
            throws Exception {
        Path src = dir.resolve("src");
        Path pkgDir = src.resolve(name.replace('.', '/'));
        Files.createDirectories(pkgDir);
        Files.writeString(
                src.resolve("module-info.java"), "module " + name + " { " + requires + " }\n");
        List<String> files = new ArrayList<>(List.of(src.resolve("module-info.java").toString()));
        for (Map.Entry<String, String> source : sources.entrySet()) {
            Path file = pkgDir.resolve(source.getKey() + ".java");
            Files.writeString(file, "package " + name + ";\n" + source.getValue());
            files.add(file.toString());
        }
        List<String> command =
                new ArrayList<>(
                        List.of(
                                tool("javac"),
                                "-Xmaxerrs",
                                "1000",
                                "--module-path",
                                modulePath(),
                                "-d",
                                dir.resolve("classes").toString()));
        command.addAll(files);
        return run(command);
    }

    /** One class per entry of {@code classes}, each with a field of that class. */
    private static Map<String, String> fieldsOf(Map<String, String> classes) {
        Map<String, String> sources = new LinkedHashMap<>();
        int i = 0;
        for (String c : classes.values()) {
            sources.put("Uses" + i, "class Uses" + i++ + " {\n    " + c + " field;\n}\n");
        }
        return sources;
    }

    private static String tool(String name) {
        return Path.of(System.getProperty("java.home"), "bin", name).toString();
    }

    private static Result run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), command.get(0) + " still running");
        return new Result(p.exitValue(), output);
    }
}

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Opcodes;

/**
 * Rewrites the class files under some packages of a jar that are older than Java 6 (version 50)
 * as Java 8 class files with stack map frames, the bytecode unchanged. JDK 17's class data
 * sharing leaves such class files out of an archive (they need the old verifier), so a command
 * whose start loads them loads and verifies them from the jar at every start: picocli's 228
 * classes, compiled for Java 5, of which a start of {@code ./cri4j proxy} loads about 175 (with
 * them in its archive it starts in 0.85 of the time).
 *
 * <p>Run by the build on the shaded jar, in place: {@code java -cp ASM_JAR ArchivableClasses.java
 * JAR PACKAGE_DIR...} (e.g. {@code picocli/}). Prints how many classes it rewrote; fails when a
 * class the frames need cannot be found (in the jar or the JDK) or a method uses JSR/RET.
 */
public final class ArchivableClasses {
    private static final int JAVA_6 = 50;

    private final FileSystem jar;
    private final Map<String, String[]> hierarchy = new HashMap<>();

    private ArchivableClasses(FileSystem jar) {
        this.jar = jar;
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: ArchivableClasses JAR PACKAGE_DIR...");
            System.exit(2);
        }
        int rewritten = 0;
        try (FileSystem fs = FileSystems.newFileSystem(Path.of(args[0]))) {
            ArchivableClasses tool = new ArchivableClasses(fs);
            for (int i = 1; i < args.length; i++) {
                rewritten += tool.rewrite(fs.getPath(args[i]));
            }
        }
        System.out.println(
                "ArchivableClasses: " + rewritten + " class files rewritten in " + args[0]);
    }

    private int rewrite(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException(dir + " is not a directory of " + jar);
        }
        List<Path> classes = new ArrayList<>();
        try (Stream<Path> s = Files.walk(dir)) {
            s.filter(p -> p.toString().endsWith(".class")).forEach(classes::add);
        }
        int n = 0;
        for (Path p : classes) {
            byte[] in = Files.readAllBytes(p);
            if (majorVersion(in) >= JAVA_6) {
                continue;
            }
            FileTime modified = Files.getLastModifiedTime(p);
            Files.write(p, withFrames(in));
            Files.setLastModifiedTime(p, modified);
            n++;
        }
        return n;
    }

    private static int majorVersion(byte[] classFile) {
        return ((classFile[6] & 0xff) << 8) | (classFile[7] & 0xff);
    }

    private byte[] withFrames(byte[] in) {
        ClassWriter w =
                new ClassWriter(ClassWriter.COMPUTE_FRAMES) {
                    @Override
                    protected String getCommonSuperClass(String a, String b) {
                        return commonSuperClass(a, b);
                    }
                };
        new ClassReader(in)
                .accept(
                        new ClassVisitor(Opcodes.ASM9, w) {
                            @Override
                            public void visit(
                                    int version,
                                    int access,
                                    String name,
                                    String signature,
                                    String superName,
                                    String[] interfaces) {
                                super.visit(
                                        Opcodes.V1_8,
                                        access,
                                        name,
                                        signature,
                                        superName,
                                        interfaces);
                            }
                        },
                        ClassReader.SKIP_FRAMES);
        return w.toByteArray();
    }

    /**
     * The nearest common superclass of two classes, as the verifier merges them; an interface
     * merges to {@code java/lang/Object} (the verifier treats interface types as Object).
     */
    private String commonSuperClass(String a, String b) {
        if (isInterface(a) || isInterface(b)) {
            return "java/lang/Object";
        }
        List<String> supersOfA = new ArrayList<>();
        for (String t = a; t != null; t = superName(t)) {
            supersOfA.add(t);
        }
        for (String t = b; t != null; t = superName(t)) {
            if (supersOfA.contains(t)) {
                return t;
            }
        }
        return "java/lang/Object";
    }

    private boolean isInterface(String name) {
        return info(name)[1] != null;
    }

    private String superName(String name) {
        return info(name)[0];
    }

    /** {super class name or null, non-null if an interface} of a class of the jar or the JDK. */
    private String[] info(String name) {
        return hierarchy.computeIfAbsent(
                name,
                n -> {
                    ClassReader r = new ClassReader(bytes(n));
                    return new String[] {
                        r.getSuperName(),
                        (r.getAccess() & Opcodes.ACC_INTERFACE) != 0 ? "interface" : null
                    };
                });
    }

    private byte[] bytes(String name) {
        try {
            Path inJar = jar.getPath(name + ".class");
            if (Files.exists(inJar)) {
                return Files.readAllBytes(inJar);
            }
            try (InputStream jdk = ClassLoader.getSystemResourceAsStream(name + ".class")) {
                if (jdk == null) {
                    throw new IllegalStateException(
                            "cannot compute stack map frames: class " + name + " not found");
                }
                return jdk.readAllBytes();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

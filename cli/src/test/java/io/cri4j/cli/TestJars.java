package io.cri4j.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;

/** Packs a compiled test class into a plugin jar listing it as a service. */
final class TestJars {

    private TestJars() {}

    static void write(Path jar, Class<?> type, String service) throws IOException {
        String entry = type.getName().replace('.', '/') + ".class";
        try (OutputStream o = Files.newOutputStream(jar);
                JarOutputStream j = new JarOutputStream(o);
                InputStream in = type.getClassLoader().getResourceAsStream(entry)) {
            j.putNextEntry(new JarEntry(entry));
            in.transferTo(j);
            j.closeEntry();
            j.putNextEntry(new JarEntry("META-INF/services/" + service));
            j.write((type.getName() + "\n").getBytes(StandardCharsets.UTF_8));
            j.closeEntry();
        }
    }
}

package io.cri4j.cli;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The class loader of {@code --plugins DIR}: every {@code *.jar} directly in the directory, in name
 * order, on one loader whose parent is the command's own (classes the command has, such as
 * hook-api, gRPC, protobuf, Netty and SLF4J, come from the command first).
 */
final class PluginJars {
    private PluginJars() {}

    static URLClassLoader loader(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException("--plugins " + dir + " is not a directory");
        }
        List<URL> jars = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p :
                    (Iterable<Path>)
                            s.filter(f -> f.toString().endsWith(".jar")).sorted()::iterator) {
                jars.add(p.toUri().toURL());
            }
        }
        return new URLClassLoader(jars.toArray(URL[]::new), PluginJars.class.getClassLoader());
    }
}

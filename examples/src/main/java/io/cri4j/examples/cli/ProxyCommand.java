package io.cri4j.examples.cli;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.proxy.CriProxy;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code cri4j proxy}: a CRI proxy in front of a runtime, with hooks from a watched config
 * directory (remote hook servers speaking Koordinator's protocol) and from plugin jars
 * (in-process hooks listed in {@code META-INF/services/io.cri4j.hook.RuntimeHook}). Runs until
 * interrupted (SIGINT/SIGTERM).
 */
@Command(name = "proxy", mixinStandardHelpOptions = true,
        description = "Serve a CRI proxy with hooks in front of a runtime.")
final class ProxyCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--listen", required = true, converter = EndpointConverter.class,
            description = "where the proxy serves, e.g. unix:///run/cri4j/proxy.sock")
    CriEndpoint listen;

    @Option(names = "--backend", converter = EndpointConverter.class,
            defaultValue = EndpointConverter.DEFAULT_RUNTIME_ENDPOINT,
            description = "the runtime behind the proxy (default: ${DEFAULT-VALUE})")
    CriEndpoint backend;

    @Option(names = "--hook-config-dir",
            description = "watched directory of hook configs (*.json), e.g. /etc/runtime/hookserver.d")
    Path hookConfigDir;

    @Option(names = "--plugins", description = "directory of jars with in-process hooks")
    Path plugins;

    /** Set once the proxy serves; counted down when it has stopped. For tests. */
    final CountDownLatch started = new CountDownLatch(1);
    volatile CriProxy proxy;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        CriProxy.Builder b = CriProxy.builder().listen(listen).backend(backend);
        if (hookConfigDir != null) {
            if (Files.exists(hookConfigDir) && !Files.isDirectory(hookConfigDir)) {
                throw new IOException("--hook-config-dir " + hookConfigDir + " is not a directory");
            }
            b.hookConfigDir(hookConfigDir);
        }
        URLClassLoader pluginLoader = null;
        if (plugins != null) {
            pluginLoader = pluginLoader(plugins);
            b.loadHooks(pluginLoader);
        }
        try (CriProxy p = b.build()) {
            Thread hook = new Thread(p::close, "cri4j-proxy-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            p.start();
            proxy = p;
            out.println("cri4j proxy: serving " + p.listenEndpoint() + " -> " + backend
                    + (p.backendServesV1alpha2() ? " (v1 and v1alpha2 hooked)" : " (v1; v1alpha2 hooked once the backend answers it)"));
            out.flush();
            started.countDown();
            p.awaitTermination();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is what closed us
            }
            return 0;
        } finally {
            if (pluginLoader != null) {
                pluginLoader.close();
            }
        }
    }

    private static URLClassLoader pluginLoader(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException("--plugins " + dir + " is not a directory");
        }
        List<URL> jars = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : (Iterable<Path>) s.filter(f -> f.toString().endsWith(".jar")).sorted()::iterator) {
                jars.add(p.toUri().toURL());
            }
        }
        return new URLClassLoader(jars.toArray(URL[]::new), ProxyCommand.class.getClassLoader());
    }
}

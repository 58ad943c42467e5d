package io.cri4j.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Prepares, on two daemon threads, what a start of {@code proxy}, {@code fake-runtime} and {@code
 * nri-plugin} spends most of its time on before the command runs, while the main thread reads the
 * command line. One thread loads picocli's classes in the order picocli asks for them (they come
 * from class files outside the class data sharing archive: loading them is half of picocli's time);
 * it only loads, initialising nothing, so the main thread finds each loaded or waits for it alone.
 * The other initialises what the command initialises first once it runs (SLF4J, Netty's epoll
 * transport with its native library, the CRI or NRI protobuf classes, CRI's method descriptors, the
 * gRPC and HTTP/2 classes): picocli's model and parse cost a start as much as these, and on two
 * cores the two overlap. The command runs only after {@link #await}: the main thread never
 * initialises these classes while that thread does (no class-initialisation deadlock), and before
 * then it initialises none of them itself (picocli, the JDK, this package and the option values'
 * types, such as {@code CriEndpoint} and {@code FailurePolicy}, which use none of them). The usage
 * help and the version do not wait (they use none of them either). Each step calls the same entry
 * point the command calls first, so classes initialise in the command's order. A step that fails is
 * left alone: the command then does the same work (and reports its failure) itself.
 */
final class StartWarmup {

    /** How long the command waits at most for the steps; they take a fraction of a second. */
    private static final long MAX_WAIT_MS = 10_000;

    /** The resource listing picocli's classes, one binary name a line. */
    static final String PICOCLI_CLASSES = "picocli-classes.txt";

    private final List<Runnable> steps;
    private final long maxWaitMs;
    private final Thread classes;
    private volatile Thread stepsThread;

    private StartWarmup(List<Runnable> steps, long maxWaitMs, Thread classes) {
        this.steps = steps;
        this.maxWaitMs = maxWaitMs;
        this.classes = classes;
    }

    /**
     * Starts loading picocli's classes when {@code command} has steps.
     *
     * @return null when the command has none
     */
    static StartWarmup forCommand(String command) {
        List<Runnable> steps = steps(command);
        return steps.isEmpty() ? null : of(steps);
    }

    /** Starts loading picocli's classes; {@code steps} run on {@link #startSteps}. */
    static StartWarmup of(List<Runnable> steps) {
        return of(steps, MAX_WAIT_MS);
    }

    /** As {@link #of(List)}, with {@link #await} waiting at most {@code maxWaitMs}. For tests. */
    static StartWarmup of(List<Runnable> steps, long maxWaitMs) {
        return new StartWarmup(
                List.copyOf(steps),
                maxWaitMs,
                daemon("cri4j-start-classes", StartWarmup::loadPicocliClasses));
    }

    /**
     * Starts the steps; called once SLF4J's level properties and the bridge of {@code
     * java.util.logging} are in place, which the steps' classes use.
     */
    void startSteps() {
        stepsThread =
                daemon(
                        "cri4j-start-warmup",
                        () -> {
                            for (Runnable step : steps) {
                                try {
                                    step.run();
                                } catch (Throwable ignored) { // NOPMD: the command does it again
                                    // the command meets the same failure and reports it
                                }
                            }
                        });
    }

    private static Thread daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** Loads (without initialising) the classes of {@link #PICOCLI_CLASSES}, in their order. */
    static int loadPicocliClasses() {
        int loaded = 0;
        ClassLoader loader = StartWarmup.class.getClassLoader();
        try (InputStream in = StartWarmup.class.getResourceAsStream(PICOCLI_CLASSES)) {
            if (in == null) {
                return 0;
            }
            BufferedReader names =
                    new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            for (String line = names.readLine(); line != null; line = names.readLine()) {
                String name = line.strip();
                if (name.isEmpty() || name.startsWith("#")) {
                    continue;
                }
                try {
                    Class.forName(name, false, loader);
                    loaded++;
                } catch (ClassNotFoundException | LinkageError e) {
                    // another picocli: the main thread loads what it needs itself
                }
            }
        } catch (IOException | RuntimeException e) {
            // as above
        }
        return loaded;
    }

    /** What the command initialises first, in its order (empty for the other commands). */
    static List<Runnable> steps(String command) {
        if (command == null) {
            return List.of();
        }
        return switch (command) {
            case "proxy" ->
                    List.of(
                            StartWarmup::logging,
                            StartWarmup::epoll,
                            // not the CRI service descriptors: the proxy loads a method's message
                            // classes when it first decodes one of its calls
                            () -> initialise("io.netty.bootstrap.ServerBootstrap"),
                            () ->
                                    initialise(
                                            "io.netty.handler.codec.http2.DefaultHttp2FrameReader"),
                            () ->
                                    initialise(
                                            "io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder"),
                            // the gRPC channel to the backend, which a proxy with hooks makes
                            // before it serves (without, its first call is the v1alpha2 probe a
                            // second after)
                            () -> initialise("io.grpc.netty.NettyChannelBuilder"));
            case "fake-runtime" ->
                    List.of(
                            StartWarmup::logging,
                            StartWarmup::epoll,
                            StartWarmup::criV1Services,
                            () -> io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.getServiceDescriptor(),
                            () -> io.cri4j.cri.v1alpha2.ImageServiceGrpc.getServiceDescriptor(),
                            () -> initialise("io.grpc.netty.NettyServerBuilder"));
            case "nri-plugin" ->
                    List.of(
                            StartWarmup::logging,
                            StartWarmup::epoll,
                            // the registration's messages; NRI's descriptors (the per-event
                            // calls' table) are read once the plugin is registered
                            () -> initialise("io.cri4j.hook.nri.v1alpha1.ConfigureRequest"),
                            () -> initialise("io.cri4j.hook.nri.v1alpha1.SynchronizeRequest"));
            default -> List.of();
        };
    }

    /**
     * Waits until both threads are done (at most {@value #MAX_WAIT_MS} ms in all unless a test set
     * another bound); the command runs after.
     */
    void await() {
        long deadline = System.nanoTime() + maxWaitMs * 1_000_000;
        try {
            for (Thread t : new Thread[] {classes, stepsThread}) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (t != null && left > 0) {
                    t.join(left);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Whether both threads are done. For tests. */
    boolean done() {
        Thread s = stepsThread;
        return !classes.isAlive() && (s == null || !s.isAlive());
    }

    /** SLF4J's provider and configuration (the level properties are set before this starts). */
    private static void logging() {
        org.slf4j.LoggerFactory.getILoggerFactory();
    }

    /** Netty's epoll transport and its native library, as the CRI transports ask for it. */
    private static void epoll() {
        io.netty.channel.epoll.Epoll.isAvailable();
    }

    /** CRI v1's method descriptors with their message classes and marshallers. */
    private static void criV1Services() {
        io.cri4j.cri.v1.RuntimeServiceGrpc.getServiceDescriptor();
        io.cri4j.cri.v1.ImageServiceGrpc.getServiceDescriptor();
    }

    private static void initialise(String className) {
        try {
            Class.forName(className, true, StartWarmup.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e); // a step of the list failed: StartWarmupTest
        }
    }
}

package io.cri4j.proxy;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.testing.real.internal.Commands;
import io.cri4j.testing.real.internal.Requirements;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Koordinator's hook protocol spoken by a stack that is not ours: a {@code RuntimeHookService}
 * server (and a client) in grpc-js, loading a proto written by hand from Koordinator's own
 * {@code apis/runtime/v1alpha1/api.proto} at run time ({@code koordinator-peer/} in the test
 * resources: {@code peer.js}, {@code runtime-hook-service.proto}, and {@code package.json} with
 * its lock file for {@code @grpc/grpc-js} and {@code @grpc/proto-loader}).
 *
 * <p>A started peer serves on a unix socket, records every request it gets (as the JSON
 * grpc-js decoded, field names as in the proto: {@code container_envs}, {@code pod_meta} ...)
 * and answers each method as planned ({@link #answer}, {@link #answerEchoingEnvs},
 * {@link #fail}; unplanned methods answer an empty message). {@link #stop} takes it away, as a
 * crashed koordlet. {@link #call} is the client side: one call of a hook server from grpc-js.
 *
 * <p>Needs {@code node} and the npm packages: {@code .ci/install-test-deps.sh} installs them into
 * {@value #INSTALLED_DIR} (from the lock file); where that copy is missing or from another lock
 * file, {@code npm ci} installs them under {@code target/koordinator-peer}. Without node, or npm
 * where it is needed, the calling test is skipped with the reason, or fails when {@code CI=true}.
 */
final class KoordinatorHookPeer implements AutoCloseable {
    static final String INSTALLED_DIR = "/opt/cri4j/koordinator-peer";
    private static final List<String> FILES =
            List.of("package.json", "package-lock.json", "peer.js", "runtime-hook-service.proto");
    private static final Duration WAIT = Duration.ofSeconds(30);

    /** node, the directory with the script and proto, and the node_modules to use. */
    private record Node(Path node, Path dir, Path modules) {}

    private static Node prepared;

    private final Path socket;
    private final Process process;
    private final Thread reader;
    private final Path log;
    private final OutputStream commands;
    private final Map<String, List<JsonObject>> calls = new java.util.LinkedHashMap<>();
    private final Map<String, List<String>> traceparents = new java.util.HashMap<>();
    private final Set<Integer> acked = new java.util.HashSet<>();
    private boolean listening;
    private boolean exited;
    private int seq;

    private KoordinatorHookPeer(Node n, Path socket) throws IOException {
        this.socket = socket;
        this.log = Files.createTempFile(n.dir(), "peer", ".log");
        ProcessBuilder pb =
                new ProcessBuilder(
                                n.node().toString(),
                                n.dir().resolve("peer.js").toString(),
                                "serve",
                                socket.toString(),
                                n.dir().resolve("runtime-hook-service.proto").toString())
                        .redirectError(log.toFile());
        pb.environment().put("NODE_PATH", n.modules().toString());
        this.process = pb.start();
        this.commands = process.getOutputStream();
        this.reader = new Thread(this::read, "koordinator-peer-" + socket.getFileName());
        reader.setDaemon(true);
        reader.start();
        synchronized (this) {
            await(() -> listening, "listening on " + socket);
        }
    }

    /** Starts a grpc-js hook server on {@code socket}. */
    static KoordinatorHookPeer start(Path socket) throws IOException {
        return new KoordinatorHookPeer(prepare(), socket);
    }

    /** The socket served on. */
    Path socket() {
        return socket;
    }

    /** {@code method} (e.g. {@code PreCreateContainerHook}) answers {@code response} from now on. */
    void answer(String method, JsonObject response) {
        plan(method, response, false, null);
    }

    /**
     * {@code method} answers {@code response} with the request's {@code container_envs} under it
     * (its own entries win), as koordlet builds its container answers.
     */
    void answerEchoingEnvs(String method, JsonObject response) {
        plan(method, response, true, null);
    }

    /** {@code method} fails with the gRPC status {@code code} (e.g. "UNAVAILABLE") from now on. */
    void fail(String method, String code, String message) {
        JsonObject error = new JsonObject();
        error.addProperty("code", code);
        error.addProperty("message", message);
        plan(method, new JsonObject(), false, error);
    }

    private synchronized void plan(
            String method, JsonObject response, boolean echoEnvs, JsonObject error) {
        JsonObject c = new JsonObject();
        int n = ++seq;
        c.addProperty("seq", n);
        c.addProperty("cmd", "plan");
        c.addProperty("method", method);
        c.add("response", response);
        c.addProperty("echoEnvs", echoEnvs);
        if (error != null) {
            c.add("error", error);
        }
        try {
            commands.write((c + "\n").getBytes(StandardCharsets.UTF_8));
            commands.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("the grpc-js peer is gone: " + logText(), e);
        }
        await(() -> acked.contains(n), "the plan for " + method);
    }

    /** The requests {@code method} got so far, oldest first. */
    synchronized List<JsonObject> requests(String method) {
        return List.copyOf(calls.getOrDefault(method, List.of()));
    }

    /** Waits (at most 30 s) until {@code method} got its {@code n}th request (from 1) and returns it. */
    synchronized JsonObject awaitRequest(String method, int n) {
        await(
                () -> calls.getOrDefault(method, List.of()).size() >= n,
                n
                        + " requests of "
                        + method
                        + " (got "
                        + calls.getOrDefault(method, List.of())
                        + ")");
        return calls.get(method).get(n - 1);
    }

    /**
     * The W3C {@code traceparent} metadata of the calls of {@code method} so far, oldest first (null
     * for a call without one).
     */
    synchronized List<String> traceparents(String method) {
        return new ArrayList<>(traceparents.getOrDefault(method, List.of()));
    }

    /** Every method that was called, in the order of their first call. */
    synchronized List<String> methodsCalled() {
        return List.copyOf(calls.keySet());
    }

    private void await(java.util.function.BooleanSupplier done, String what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        try {
            while (!done.getAsBoolean()) {
                if (exited) {
                    throw new IllegalStateException(
                            "the grpc-js peer exited while waiting for " + what + ": " + logText());
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException(
                            "the grpc-js peer: no "
                                    + what
                                    + " within "
                                    + WAIT
                                    + "; its log: "
                                    + logText());
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for " + what, e);
        }
    }

    private void read() {
        try (BufferedReader in =
                new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                JsonObject o;
                try {
                    o = JsonParser.parseString(line).getAsJsonObject();
                } catch (RuntimeException e) {
                    continue; // not ours
                }
                synchronized (this) {
                    switch (o.get("event").getAsString()) {
                        case "listening" -> listening = true;
                        case "ok" -> acked.add(o.get("seq").getAsInt());
                        case "call" -> {
                            calls.computeIfAbsent(
                                            o.get("method").getAsString(), k -> new ArrayList<>())
                                    .add(o.getAsJsonObject("request"));
                            traceparents
                                    .computeIfAbsent(
                                            o.get("method").getAsString(), k -> new ArrayList<>())
                                    .add(
                                            o.has("traceparent")
                                                            && !o.get("traceparent").isJsonNull()
                                                    ? o.get("traceparent").getAsString()
                                                    : null);
                        }
                        default -> {}
                    }
                    notifyAll();
                }
            }
        } catch (IOException ignored) {
            // the process is gone
        } finally {
            synchronized (this) {
                exited = true;
                notifyAll();
            }
        }
    }

    private String logText() {
        try {
            return Files.readString(log).strip();
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** Stops the server (closing its stdin; killed if it does not exit); idempotent. */
    void stop() {
        try {
            commands.close();
        } catch (IOException ignored) {
            // already closed
        }
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            reader.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        stop();
        try {
            Files.deleteIfExists(log);
        } catch (IOException ignored) {
            // under target/
        }
    }

    /**
     * Calls {@code method} of the hook server on {@code socket} once from grpc-js with
     * {@code request} (the proto's field names) and returns {@code {"response": {...}}} or
     * {@code {"error": {"code": N, "name": "INTERNAL", "details": "..."}}}.
     */
    static JsonObject call(Path socket, String method, JsonObject request) {
        Node n = prepare();
        Commands.Result r =
                Commands.exec(
                        Duration.ofSeconds(60),
                        n.dir(),
                        Map.of("NODE_PATH", n.modules().toString()),
                        List.of(
                                n.node().toString(),
                                n.dir().resolve("peer.js").toString(),
                                "call",
                                socket.toString(),
                                n.dir().resolve("runtime-hook-service.proto").toString(),
                                method,
                                request.toString()));
        String[] lines = r.output().strip().split("\n");
        try {
            JsonElement last = JsonParser.parseString(lines[lines.length - 1]);
            if (r.ok() && last.isJsonObject()) {
                return last.getAsJsonObject();
            }
        } catch (RuntimeException e) {
            // reported below
        }
        throw new IllegalStateException(
                "the grpc-js client failed (exit " + r.exitCode() + "): " + r.output());
    }

    /** Finds node, copies the peer's files to target/, and finds or installs the npm packages. */
    private static synchronized Node prepare() {
        if (prepared != null) {
            return prepared;
        }
        Path node = Requirements.require("node", "nodejs");
        Path dir = Path.of("target/koordinator-peer").toAbsolutePath();
        byte[] lock;
        try {
            Files.createDirectories(dir);
            for (String f : FILES) {
                try (InputStream in =
                        KoordinatorHookPeer.class.getResourceAsStream("koordinator-peer/" + f)) {
                    if (in == null) {
                        throw new IllegalStateException(
                                "test resource koordinator-peer/" + f + " is missing");
                    }
                    Files.write(dir.resolve(f), in.readAllBytes());
                }
            }
            lock = Files.readAllBytes(dir.resolve("package-lock.json"));
            Path modules = installed(Path.of(INSTALLED_DIR), lock);
            if (modules == null) {
                modules = installed(dir, lock);
            }
            if (modules == null) {
                modules = npmCi(dir, lock);
            }
            prepared = new Node(node, dir, modules);
            return prepared;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare the grpc-js peer in " + dir, e);
        }
    }

    /** {@code dir}'s node_modules when they were installed from exactly {@code lock}, else null. */
    private static Path installed(Path dir, byte[] lock) throws IOException {
        Path marker = dir.resolve("node_modules/.cri4j-package-lock.json");
        if (Files.isRegularFile(marker)
                && Arrays.equals(Files.readAllBytes(marker), lock)
                && Files.isRegularFile(dir.resolve("node_modules/@grpc/grpc-js/package.json"))
                && Files.isRegularFile(
                        dir.resolve("node_modules/@grpc/proto-loader/package.json"))) {
            return dir.resolve("node_modules");
        }
        return null;
    }

    private static Path npmCi(Path dir, byte[] lock) throws IOException {
        Path npm = Requirements.require("npm", "npm");
        Commands.Result r =
                Commands.exec(
                        Duration.ofMinutes(5),
                        dir,
                        Map.of(),
                        List.of(
                                npm.toString(),
                                "ci",
                                "--ignore-scripts",
                                "--no-audit",
                                "--no-fund"));
        if (!r.ok()) {
            Requirements.unavailable(
                    "npm ci of the grpc-js peer's packages failed in "
                            + dir
                            + " (.ci/install-test-deps.sh installs them into "
                            + INSTALLED_DIR
                            + "): "
                            + r.output().strip());
        }
        Files.write(dir.resolve("node_modules/.cri4j-package-lock.json"), lock);
        return dir.resolve("node_modules");
    }
}

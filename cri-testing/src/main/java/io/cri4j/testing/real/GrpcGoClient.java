package io.cri4j.testing.real;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.testing.real.internal.Commands;
import io.cri4j.testing.real.internal.Requirements;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * kubelet's gRPC stack as a test client: a small grpc-go program, whose source ships in this
 * jar, built with the machine's Go toolchain and Debian's grpc-go sources, that makes unary calls
 * with request bytes given as they are and reports their latency. Use it where what matters is
 * how a server or proxy meets grpc-go on the wire (its framing, its BDP and keepalive PINGs), not
 * grpc-java.
 *
 * <pre>{@code
 * GrpcGoClient go = GrpcGoClient.build(Path.of("target/grpcgo"));
 * GrpcGoClient.Run run = go.call(proxy.listenEndpoint(),
 *     "/runtime.v1.RuntimeService/Version", VersionRequest.getDefaultInstance().toByteArray(), 100);
 * assertThat(run.ok()).as(run.output()).isTrue();
 * }</pre>
 *
 * <p>Needs Debian's {@code golang-go} and {@code golang-google-grpc-dev} (Go 1.19 and grpc-go 1.33
 * on Debian 12; GOPATH mode, nothing is downloaded). Where they are missing, {@link #build} skips
 * the calling test, or fails it when the environment variable {@code CI} is {@code true}. Unix
 * sockets only.
 */
public final class GrpcGoClient {
    private static final String SOURCE = "grpcgo/main.go";
    private static final Path DEBIAN_GOPATH = Path.of("/usr/share/gocode");
    private static final Map<Path, GrpcGoClient> BUILT = new ConcurrentHashMap<>();

    /** Requests up to this size go on the command line in hex, larger ones in a file. */
    private static final int HEX_UP_TO = 16 * 1024;

    private final Path binary;

    private GrpcGoClient(Path binary) {
        this.binary = binary;
    }

    /**
     * Builds the client under {@code dir} (once per directory and JVM; Go's build cache under
     * {@code dir} makes later builds quick).
     *
     * @param dir a directory of its own, e.g. {@code target/grpcgo}; created when missing
     */
    public static GrpcGoClient build(Path dir) {
        Path key = dir.toAbsolutePath().normalize();
        return BUILT.computeIfAbsent(key, GrpcGoClient::compile);
    }

    private static GrpcGoClient compile(Path dir) {
        Path go = Requirements.require("go", "golang-go");
        if (!Files.isDirectory(DEBIAN_GOPATH.resolve("src/google.golang.org/grpc"))) {
            Requirements.unavailable(
                    "grpc-go's sources are not installed under "
                            + DEBIAN_GOPATH
                            + " (Debian package golang-google-grpc-dev; .ci/install-test-deps.sh installs"
                            + " everything the real-runtime tests need)");
        }
        try {
            Path src = dir.resolve("src/grpcgolatency");
            Files.createDirectories(src);
            try (InputStream in = GrpcGoClient.class.getResourceAsStream(SOURCE)) {
                Objects.requireNonNull(in, "resource " + SOURCE + " is missing from cri-testing");
                Files.write(src.resolve("main.go"), in.readAllBytes());
            }
            Path binary = dir.resolve("grpcgolatency");
            Commands.run(
                    Duration.ofMinutes(3),
                    src,
                    Map.of(
                            "GO111MODULE",
                            "off",
                            "GOPATH",
                            dir + ":" + DEBIAN_GOPATH,
                            "GOCACHE",
                            dir.resolve("cache").toString(),
                            "GOFLAGS",
                            ""),
                    List.of(go.toString(), "build", "-o", binary.toString(), "."));
            return new GrpcGoClient(binary);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot build the grpc-go client in " + dir, e);
        }
    }

    /** The built program (see its source for its flags; it also benchmarks). */
    public Path binary() {
        return binary;
    }

    /**
     * Makes {@code calls} unary calls of {@code fullMethod} one after another on one grpc-go
     * connection to {@code endpoint}, each with {@code request} as its message bytes, and stops
     * at the first that fails.
     *
     * @param fullMethod e.g. {@code /runtime.v1.RuntimeService/Version}
     */
    public Run call(CriEndpoint endpoint, String fullMethod, byte[] request, int calls) {
        return call(endpoint, calls, new Call(fullMethod, request));
    }

    /**
     * Makes {@code each} unary calls of every one of {@code calls} in turn, one after another on
     * one grpc-go connection to {@code endpoint}, and stops at the first that fails (a call fails
     * with DEADLINE_EXCEEDED after 20 s).
     */
    public Run call(CriEndpoint endpoint, int each, Call... calls) {
        if (!endpoint.isUnix()) {
            throw new IllegalArgumentException("a unix endpoint is needed: " + endpoint);
        }
        if (each < 1 || calls.length == 0) {
            throw new IllegalArgumentException("nothing to call: " + each + " x " + calls.length);
        }
        List<String> command =
                new ArrayList<>(
                        List.of(
                                binary.toString(),
                                "-shared",
                                "-rounds",
                                "1",
                                "-calls",
                                Integer.toString(each),
                                "-warmup",
                                "0",
                                "-timeout",
                                "20s"));
        List<Path> files = new ArrayList<>();
        try {
            for (int i = 0; i < calls.length; i++) {
                byte[] request = calls[i].request();
                String given = HexFormat.of().formatHex(request);
                if (request.length > HEX_UP_TO) { // a command-line argument holds 128 KiB at most
                    Path f = Files.createTempFile(binary.getParent(), "request", ".bin");
                    files.add(f);
                    Files.write(f, request);
                    given = f.toAbsolutePath().toString();
                }
                command.add(
                        "call"
                                + i
                                + "="
                                + endpoint.path()
                                + "@"
                                + given
                                + "#"
                                + calls[i].fullMethod());
            }
            Commands.Result r = Commands.exec(Duration.ofMinutes(2), null, Map.of(), command);
            return new Run(r.exitCode(), r.output());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot hand requests to the grpc-go client", e);
        } finally {
            for (Path f : files) {
                try {
                    Files.deleteIfExists(f);
                } catch (IOException ignored) {
                    // best effort: under the build directory
                }
            }
        }
    }

    /**
     * One kind of call.
     *
     * @param fullMethod e.g. {@code /runtime.v1.RuntimeService/Version}
     * @param request the request message's bytes
     */
    public record Call(String fullMethod, byte[] request) {
        /** Checks the method name's form. */
        public Call {
            if (!fullMethod.startsWith("/") || fullMethod.indexOf('/', 1) < 0) {
                throw new IllegalArgumentException("not /service/method: " + fullMethod);
            }
            request = request.clone();
        }

        @Override
        public byte[] request() {
            return request.clone();
        }
    }

    /**
     * How a run of the client ended.
     *
     * @param exitCode 0 when every call succeeded
     * @param output what it printed: its latency line, or the status of the call that failed
     */
    public record Run(int exitCode, String output) {
        /** Whether every call succeeded. */
        public boolean ok() {
            return exitCode == 0;
        }

        /** The size in bytes of the last reply to each kind of call, in the order called. */
        public List<Integer> replySizes() {
            List<Integer> sizes = new ArrayList<>();
            java.util.regex.Matcher m =
                    java.util.regex.Pattern.compile("reply (\\d+) B").matcher(output);
            while (m.find()) {
                sizes.add(Integer.parseInt(m.group(1)));
            }
            return sizes;
        }
    }
}

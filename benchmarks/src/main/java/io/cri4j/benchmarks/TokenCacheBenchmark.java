package io.cri4j.benchmarks;

import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.streaming.StreamingRuntime;
import io.cri4j.streaming.StreamingServer;
import io.cri4j.streaming.internal.RequestCache;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Token cache insert + consume (one single-use URL handed out and redeemed per operation):
 * <ul>
 * <li>{@code cacheInsertConsume}: the internal {@link RequestCache} alone (128-bit SecureRandom
 *     token, LinkedHashMap under a lock, TTL sweep);</li>
 * <li>{@code getExecConsume}: the public path of a CRI runtime, {@link StreamingServer#getExec}
 *     (validation, token, URL string), then the lookup that the HTTP handler does with the token
 *     from the URL (the server's own cache, reached by reflection: benchmarks are not API);</li>
 * <li>{@code ...2Threads}: the same from 2 threads at once (lock contention).</li>
 * </ul>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class TokenCacheBenchmark {
    private RequestCache cache;
    private StreamingServer server;
    private RequestCache serverCache;
    private ExecRequest request;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        cache = new RequestCache(Duration.ofMinutes(1), 1000);
        StreamingRuntime runtime = (id, cmd, s) -> 0;
        server = StreamingServer.builder(runtime).build().start();
        java.lang.reflect.Field f = StreamingServer.class.getDeclaredField("cache");
        f.setAccessible(true);
        serverCache = (RequestCache) f.get(server);
        request =
                ExecRequest.newBuilder()
                        .setContainerId("c0ffee")
                        .addCmd("sh")
                        .setStdin(true)
                        .setStdout(true)
                        .setTty(true)
                        .build();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        server.close();
    }

    @Benchmark
    public Object cacheInsertConsume() {
        return consumed(cache.consume(cache.insert(request)));
    }

    @Benchmark
    @Threads(2)
    public Object cacheInsertConsume2Threads() {
        return cacheInsertConsume();
    }

    @Benchmark
    public Object getExecConsume() {
        String url = server.getExec(request).getUrl();
        return consumed(serverCache.consume(url.substring(url.lastIndexOf('/') + 1)));
    }

    @Benchmark
    @Threads(2)
    public Object getExecConsume2Threads() {
        return getExecConsume();
    }

    private static Object consumed(Object o) {
        if (o == null) {
            throw new IllegalStateException("token was not found");
        }
        return o;
    }
}

package io.cri4j.benchmarks;

import io.cri4j.streaming.StreamingClient;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Exec stdout throughput: time to move {@code mib} MiB from a runtime's stdout to the client over
 * SPDY and over WebSocket (our server + our client, a new exec per operation), against a raw
 * loopback TCP copy of the same bytes (new connection per operation). MiB/s = mib / (s/op). On a
 * shared machine JMH runs the three benchmarks one after the other, in different load phases; the
 * ratio figures come from {@link StreamingThroughputRatio}, which interleaves them.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class StreamingThroughputBenchmark {
    @Param("32")
    public int mib;

    private StreamingFixture fixture;
    private StreamingClient spdy;
    private StreamingClient ws;
    private long bytes;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        fixture = new StreamingFixture(1000);
        spdy = StreamingClient.builder().build();
        ws = StreamingClient.builder().transport(StreamingClient.Transport.WEBSOCKET).build();
        bytes = (long) mib << 20;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        ws.close();
        spdy.close();
        fixture.close();
    }

    @Benchmark
    public long rawSocketCopy() throws Exception {
        long n = fixture.rawCopy(bytes);
        StreamingFixture.check(bytes, n);
        return n;
    }

    @Benchmark
    public long execStdoutSpdy() throws Exception {
        long n = fixture.execCopy(spdy, bytes);
        StreamingFixture.check(bytes, n);
        return n;
    }

    @Benchmark
    public long execStdoutWebSocket() throws Exception {
        long n = fixture.execCopy(ws, bytes);
        StreamingFixture.check(bytes, n);
        return n;
    }
}

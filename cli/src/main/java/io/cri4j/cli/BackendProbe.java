package io.cri4j.cli;

import io.cri4j.cri.CriEndpoint;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Whether the runtime behind the proxy accepts connections, checked every half second on a thread
 * of its own (a connect, no call): what {@code /readyz} answers from, within a second of the runtime
 * going away or coming back. Records {@code cri4j_proxy_backend_up} and counts the changes.
 */
final class BackendProbe implements AutoCloseable {
    static final Duration PERIOD = Duration.ofMillis(500);

    private final CriEndpoint backend;
    private final ScheduledExecutorService timer;
    private volatile String down = "not checked yet";
    private final Counter lost;
    private final Counter regained;

    BackendProbe(CriEndpoint backend, MeterRegistry registry) {
        this.backend = backend;
        if (registry != null) {
            Gauge.builder("cri4j.proxy.backend.up", this, p -> p.down == null ? 1 : 0)
                    .description("1 while the runtime behind the proxy accepts connections, else 0")
                    .register(registry);
            lost =
                    Counter.builder("cri4j.proxy.backend.lost")
                            .description(
                                    "times the runtime behind the proxy stopped accepting connections")
                            .register(registry);
            regained =
                    Counter.builder("cri4j.proxy.backend.reconnects")
                            .description(
                                    "times the runtime behind the proxy accepted connections again after it was lost")
                            .register(registry);
        } else {
            lost = null;
            regained = null;
        }
        check();
        timer =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "cri4j-backend-probe");
                            t.setDaemon(true);
                            return t;
                        });
        timer.scheduleWithFixedDelay(
                this::check, PERIOD.toMillis(), PERIOD.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Null when the backend accepted the last connection, else why not. */
    String down() {
        return down;
    }

    private void check() {
        String before = down;
        String now = connect();
        down = now;
        if (lost != null && before == null && now != null) {
            lost.increment();
        } else if (regained != null
                && before != null
                && now == null
                && !before.equals("not checked yet")) {
            regained.increment();
        }
    }

    private String connect() {
        try {
            if (backend.isUnix()) {
                try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                    ch.connect(UnixDomainSocketAddress.of(backend.path()));
                }
            } else {
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress(backend.host(), backend.port()), 400);
                }
            }
            return null;
        } catch (IOException | RuntimeException e) {
            return "the runtime "
                    + backend
                    + " does not accept connections ("
                    + e.getMessage()
                    + ")";
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}

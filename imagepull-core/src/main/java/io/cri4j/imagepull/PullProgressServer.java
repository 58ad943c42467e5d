package io.cri4j.imagepull;

import io.cri4j.cri.internal.http.HttpSurface;
import io.cri4j.imagepull.internal.ProgressHttpHandler;
import io.cri4j.streaming.StreamAuthorizer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Serves a {@link PullObserver}'s pulls over HTTP, in KEP-5334's shape:
 * <ul>
 *   <li>{@code GET /imagePullProgress}: {@code {"pulls":[...]}}, the pulls in progress and those that ended
 *   within the retention, each with its layers;</li>
 *   <li>{@code GET /imagePullProgress?image=REF}: newline-delimited JSON objects
 *   {@code {name, image, layer, progress, total, error, ...}} as the pull of {@code REF} goes (a line per
 *   layer that changed, then the image's line), until it ends (the last line is the image's, with
 *   {@code error} when it failed); it waits for a pull of {@code REF} to start, and answers at once for one
 *   that ended within the retention;</li>
 *   <li>{@code GET /imagePullProgress?follow=true}: the same lines for every pull, until the client goes;</li>
 *   <li>{@code GET /}: a page with live bars (plain HTML and JavaScript from this jar).</li>
 * </ul>
 * The object fields are described in {@code cri4j.imagepull.v1.ImagePullProgress}; {@code total} is -1
 * while the runtime's progress cannot be observed.
 *
 * <p>Loopback only unless {@link Builder#allowRemote(boolean)}; every request first passes the same
 * {@link StreamAuthorizer} hook as the streaming server's ({@link io.cri4j.streaming.StreamKind#IMAGE_PULL_PROGRESS},
 * target: the image, empty for the list and the page; refused: 403). Too many open streams answer 503. A
 * slow reader gets the latest figures rather than every change (lines are coalesced while its connection
 * is not writable); a reader that takes nothing for the {@linkplain Builder#stallTimeout stall timeout} is
 * dropped. A request must arrive whole within the {@linkplain Builder#requestTimeout request timeout}
 * however slowly it comes; connections are capped ({@link Builder#maxConnections}, 503 beyond); a
 * {@code Host} header must name a loopback name or address unless {@linkplain Builder#allowHosts
 * allowed} (403 otherwise); a path or query that cannot be decoded is answered 400 with the reason.
 */
public final class PullProgressServer implements AutoCloseable {

    private final Builder b;
    private final AtomicInteger state = new AtomicInteger(); // 0 new, 1 started, 2 closed
    private volatile HttpSurface surface;

    private PullProgressServer(Builder b) {
        this.b = b;
    }

    /**
     * @param observer the pulls to serve
     * @return a builder
     */
    public static Builder builder(PullObserver observer) {
        return new Builder(Objects.requireNonNull(observer, "observer"));
    }

    /**
     * Binds and starts serving.
     *
     * @return this server
     * @throws IOException when the address cannot be bound
     */
    public PullProgressServer start() throws IOException {
        if (!state.compareAndSet(0, 1)) {
            throw new IllegalStateException("server already started or closed");
        }
        HttpSurface.Builder hb =
                HttpSurface.builder(
                                "image pull progress",
                                () -> new ProgressHttpHandler(b.observer, b.authorizer))
                        .threadName("cri4j-pull-progress-http")
                        .bindAddress(b.bindAddress)
                        .allowRemote(b.allowRemote)
                        .allowHosts(b.allowedHosts)
                        .requestTimeout(b.requestTimeout)
                        .stallTimeout(b.stallTimeout)
                        .maxConnections(b.maxConnections);
        HttpSurface s;
        try {
            s = hb.build();
        } catch (IllegalArgumentException e) {
            throw new IOException(e.getMessage(), e);
        }
        surface = s.start();
        return this;
    }

    /** The bound address (the real port when port 0 was asked for). */
    public InetSocketAddress address() {
        HttpSurface s = surface;
        if (s == null) {
            throw new IllegalStateException("server not started");
        }
        return s.address();
    }

    /** {@code http://HOST:PORT/}: the page; {@code imagePullProgress} below it is the API. */
    public URI baseUrl() {
        address();
        return surface.baseUrl();
    }

    /** Closes every connection (open streams end) and releases the thread; idempotent. */
    @Override
    public void close() {
        if (state.getAndSet(2) == 2) {
            return;
        }
        HttpSurface s = surface;
        if (s != null) {
            s.close();
        }
    }

    /** Configures a {@link PullProgressServer}. */
    public static final class Builder {
        private final PullObserver observer;

        // an IP literal: nothing is looked up, so there is no choice among a name's addresses to
        // make
        @SuppressWarnings("AddressSelection")
        private InetSocketAddress bindAddress = new InetSocketAddress("127.0.0.1", 0);

        private boolean allowRemote;
        private StreamAuthorizer authorizer;
        private Duration requestTimeout = Duration.ofSeconds(30);
        private Duration stallTimeout = Duration.ofSeconds(30);
        private int maxConnections = 128;
        private final List<String> allowedHosts = new ArrayList<>();

        private Builder(PullObserver observer) {
            this.observer = observer;
        }

        /** @param address where to listen (default 127.0.0.1 on a free port); loopback unless {@link #allowRemote} */
        public Builder bindAddress(InetSocketAddress address) {
            this.bindAddress = Objects.requireNonNull(address, "address");
            return this;
        }

        /** @param allow whether a non-loopback address may be bound (default false) */
        public Builder allowRemote(boolean allow) {
            this.allowRemote = allow;
            return this;
        }

        /**
         * @param authorizer asked before each request is served, on the event loop (must not block);
         *                   {@code false} or an exception answers 403
         */
        public Builder authorizer(StreamAuthorizer authorizer) {
            this.authorizer = authorizer;
            return this;
        }

        /**
         * @param timeout the time within which a request must have arrived whole, from when the
         *     connection opened or its previous response ended, however slowly its bytes come
         *     (default 30 s)
         */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = positive(timeout, "request timeout");
            return this;
        }

        /**
         * @param timeout how long a stream's reader may take nothing (its connection staying
         *     unwritable) before it is dropped (default 30 s)
         */
        public Builder stallTimeout(Duration timeout) {
            this.stallTimeout = positive(timeout, "stall timeout");
            return this;
        }

        /** @param max connections open at once; one more is answered 503 (default 128) */
        public Builder maxConnections(int max) {
            if (max < 1) {
                throw new IllegalArgumentException(
                        "max connections must be at least 1, was " + max);
            }
            this.maxConnections = max;
            return this;
        }

        /**
         * @param hosts names a request's {@code Host} header may carry besides loopback names and
         *     addresses and the address the connection came to ({@code *}: any); others get 403,
         *     which keeps a web page's DNS rebinding away from a loopback port
         */
        public Builder allowHosts(List<String> hosts) {
            for (String h : hosts) {
                if (h == null || h.isBlank()) {
                    throw new IllegalArgumentException("an allowed host must not be empty");
                }
                allowedHosts.add(h.strip());
            }
            return this;
        }

        private static Duration positive(Duration d, String what) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive, was " + d);
            }
            return d;
        }

        /**
         * @return the server, not started
         * @throws IllegalArgumentException when the address is not loopback and remote access was not allowed
         */
        public PullProgressServer build() {
            if (!allowRemote
                    && (bindAddress.isUnresolved()
                            || !bindAddress.getAddress().isLoopbackAddress())) {
                throw new IllegalArgumentException(
                        "image pull progress address "
                                + bindAddress.getHostString()
                                + ":"
                                + bindAddress.getPort()
                                + " is not a loopback address; allow remote access explicitly to serve it");
            }
            return new PullProgressServer(this);
        }
    }
}

package io.cri4j.imagepull.internal;

import com.google.protobuf.ByteString;
import io.cri4j.imagepull.ImagePullBackend.ProgressSink;
import io.cri4j.imagepull.internal.containerd.ContentGrpc;
import io.cri4j.imagepull.internal.containerd.ListStatusesRequest;
import io.cri4j.imagepull.internal.containerd.ListStatusesResponse;
import io.cri4j.imagepull.internal.containerd.ReadContentRequest;
import io.cri4j.imagepull.internal.containerd.ReadContentResponse;
import io.cri4j.imagepull.internal.containerd.Status;
import io.grpc.Channel;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Byte progress of containerd pulls: polls {@code containerd.services.content.v1.Content/ListStatuses}
 * (in the namespace given by the {@code containerd-namespace} header, {@code k8s.io} for CRI) while
 * pulls are tracked and hands each layer ingest ({@code layer-sha256:...} refs) to the tracked
 * pulls. An ingest that disappears between polls was committed and is reported complete.
 *
 * <p>Attribution: with one pull tracked, every layer ingest is its own (exact). With several
 * pulls running at once on one containerd, an ingest goes to each tracked pull that started
 * before the ingest did, so a pull's running figures can include another's layers until it
 * completes and its exact layers are read from its manifest ({@link #readBlob(String)}).
 */
public final class ContentProgressPoller implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ContentProgressPoller.class);
    /** gRPC metadata header carrying the containerd namespace. */
    public static final Metadata.Key<String> NAMESPACE_HEADER =
            Metadata.Key.of("containerd-namespace", Metadata.ASCII_STRING_MARSHALLER);
    private static final String LAYER_REF_PREFIX = "layer-";

    /** A pull being watched. */
    public final class Tracked implements AutoCloseable {
        final ProgressSink sink;
        final Instant start;
        final Map<String, Long> seen = new HashMap<>();

        Tracked(ProgressSink sink, Instant start) {
            this.sink = sink;
            this.start = start;
        }

        @Override
        public void close() {
            untrack(this);
        }
    }

    private final ContentGrpc.ContentStub stub;
    private final Duration interval;
    private final ScheduledExecutorService executor;
    private final Set<Tracked> tracked = ConcurrentHashMap.newKeySet();
    private ScheduledFuture<?> task;
    private volatile String unavailable;
    private boolean polling;

    /**
     * @param channel a channel to containerd (the socket that also serves CRI)
     * @param namespace containerd namespace ({@code k8s.io} for CRI)
     * @param interval poll interval
     * @param executor where polls are scheduled
     */
    public ContentProgressPoller(Channel channel, String namespace, Duration interval, ScheduledExecutorService executor) {
        Metadata md = new Metadata();
        md.put(NAMESPACE_HEADER, namespace);
        this.stub = ContentGrpc.newStub(channel).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(md));
        this.interval = interval;
        this.executor = executor;
    }

    /** @return why byte progress is unavailable, or null when it is (or has not been tried) */
    public String unavailableReason() {
        return unavailable;
    }

    /**
     * Starts watching for a pull.
     *
     * @param sink where the pull's layers go
     * @return the handle; close it when the pull ends
     */
    public Tracked track(ProgressSink sink) {
        Tracked t = new Tracked(sink, Instant.now().minusSeconds(1));
        String why = unavailable;
        if (why != null) {
            sink.unknown(why);
            return t;
        }
        tracked.add(t);
        synchronized (this) {
            if (task == null) {
                task = executor.scheduleWithFixedDelay(this::poll, 0, interval.toNanos(), TimeUnit.NANOSECONDS);
            }
        }
        return t;
    }

    private void untrack(Tracked t) {
        tracked.remove(t);
        synchronized (this) {
            if (tracked.isEmpty() && task != null) {
                task.cancel(false);
                task = null;
            }
        }
    }

    /** Polls once now (also used at a pull's end so the last bytes are seen). */
    public void poll() {
        synchronized (this) {
            if (polling || tracked.isEmpty()) {
                return;
            }
            polling = true;
        }
        stub.withDeadlineAfter(5, TimeUnit.SECONDS).listStatuses(ListStatusesRequest.getDefaultInstance(),
                new StreamObserver<>() {
                    private ListStatusesResponse response;

                    @Override
                    public void onNext(ListStatusesResponse value) {
                        response = value;
                    }

                    @Override
                    public void onError(Throwable t) {
                        done();
                        io.grpc.Status s = io.grpc.Status.fromThrowable(t);
                        if (s.getCode() == io.grpc.Status.Code.UNIMPLEMENTED) {
                            String why = "the runtime has no containerd content service, so byte progress is unknown";
                            unavailable = why;
                            LOG.info("{}", why);
                            for (Tracked tr : tracked) {
                                tr.sink.unknown(why);
                                untrack(tr);
                            }
                        } else {
                            LOG.debug("ListStatuses failed: {}", s);
                        }
                    }

                    @Override
                    public void onCompleted() {
                        done();
                        if (response != null) {
                            deliver(response);
                        }
                    }
                });
    }

    private synchronized void done() {
        polling = false;
    }

    private void deliver(ListStatusesResponse response) {
        Map<String, Status> layers = new HashMap<>();
        for (Status s : response.getStatusesList()) {
            if (s.getRef().startsWith(LAYER_REF_PREFIX)) {
                String digest = s.getExpected().isEmpty() ? s.getRef().substring(LAYER_REF_PREFIX.length()) : s.getExpected();
                layers.put(shortId(digest), s);
            }
        }
        List<Tracked> all = new ArrayList<>(tracked);
        // a lone pull owns every ingest, including one resumed from its own earlier attempt
        Tracked alone = all.size() == 1 ? all.get(0) : null;
        for (Tracked t : all) {
            synchronized (t) {
                // completions first, so no snapshot shows new bytes beside a stale finished layer
                for (Map.Entry<String, Long> e : t.seen.entrySet()) {
                    if (!layers.containsKey(e.getKey()) && e.getValue() >= 0) {
                        t.sink.layer(e.getKey(), "Download complete", e.getValue(), e.getValue());
                    }
                }
                for (Map.Entry<String, Status> e : layers.entrySet()) {
                    Status s = e.getValue();
                    Instant started = Instant.ofEpochSecond(s.getStartedAt().getSeconds(), s.getStartedAt().getNanos());
                    if (alone == null && s.hasStartedAt() && started.isBefore(t.start) && !t.seen.containsKey(e.getKey())) {
                        continue; // with other pulls running, an ingest older than this pull belongs to another
                    }
                    long total = s.getTotal() > 0 ? s.getTotal() : -1;
                    t.seen.put(e.getKey(), total);
                    t.sink.layer(e.getKey(), "Downloading", s.getOffset(), total);
                }
            }
        }
    }

    /**
     * Reads a committed blob (a manifest or index) from the content store.
     *
     * @param digest {@code sha256:...}
     * @return its bytes
     */
    public CompletableFuture<byte[]> readBlob(String digest) {
        CompletableFuture<byte[]> out = new CompletableFuture<>();
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).read(ReadContentRequest.newBuilder().setDigest(digest).build(),
                new StreamObserver<>() {
                    @Override
                    public void onNext(ReadContentResponse value) {
                        ByteString d = value.getData();
                        if (buf.size() + d.size() > 4 * 1024 * 1024) {
                            out.completeExceptionally(new StatusRuntimeException(io.grpc.Status.RESOURCE_EXHAUSTED
                                    .withDescription("blob " + digest + " is larger than 4 MiB; not a manifest")));
                            return;
                        }
                        buf.writeBytes(d.toByteArray());
                    }

                    @Override
                    public void onError(Throwable t) {
                        out.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {
                        out.complete(buf.toByteArray());
                    }
                });
        return out;
    }

    /** @param digest {@code sha256:hex} @return the first 12 hex digits, as Docker shows layer ids */
    public static String shortId(String digest) {
        int colon = digest.indexOf(':');
        String hex = colon >= 0 ? digest.substring(colon + 1) : digest;
        return hex.length() > 12 ? hex.substring(0, 12) : hex;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (task != null) {
                task.cancel(false);
                task = null;
            }
        }
        tracked.clear();
    }
}

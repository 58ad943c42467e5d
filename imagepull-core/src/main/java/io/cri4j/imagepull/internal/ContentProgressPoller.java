package io.cri4j.imagepull.internal;

import com.google.protobuf.ByteString;
import io.cri4j.cri.internal.containerd.ContentGrpc;
import io.cri4j.cri.internal.containerd.Info;
import io.cri4j.cri.internal.containerd.InfoRequest;
import io.cri4j.cri.internal.containerd.InfoResponse;
import io.cri4j.cri.internal.containerd.ListContentRequest;
import io.cri4j.cri.internal.containerd.ListContentResponse;
import io.cri4j.cri.internal.containerd.ListStatusesRequest;
import io.cri4j.cri.internal.containerd.ListStatusesResponse;
import io.cri4j.cri.internal.containerd.ReadContentRequest;
import io.cri4j.cri.internal.containerd.ReadContentResponse;
import io.cri4j.cri.internal.containerd.Status;
import io.cri4j.imagepull.ImagePullBackend.ProgressSink;
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
import java.util.LinkedHashMap;
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
 * Byte progress of containerd pulls from containerd's content service, in the namespace given by
 * the {@code containerd-namespace} header ({@code k8s.io} for CRI), polled while pulls are tracked.
 *
 * <p>Each poll lists the ingests in progress ({@code Content/ListStatuses}, refs
 * {@code layer-sha256:...}). To know which ingests belong to which pull, the poller finds the
 * pull's manifest as soon as containerd has stored it: a blob created since the pull started
 * whose {@code containerd.io/distribution.source.<host>} label names the pull's repository and
 * which carries {@code containerd.io/gc.ref.content.l.*} labels (a manifest; found with
 * {@code Content/List} and a label filter), read with {@code Content/Read}. From then on the pull
 * has its exact layer list with sizes: a layer is downloading (an ingest), complete (committed:
 * {@code Content/Info} finds it, or its ingest ended) or waiting. Until the manifest is found, or
 * when none is new (the manifest was already stored), a pull running alone takes every layer
 * ingest as its own; concurrent pulls wait for their manifests rather than guess.
 */
public final class ContentProgressPoller implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ContentProgressPoller.class);

    /** gRPC metadata header carrying the containerd namespace. */
    public static final Metadata.Key<String> NAMESPACE_HEADER =
            Metadata.Key.of("containerd-namespace", Metadata.ASCII_STRING_MARSHALLER);

    private static final String LAYER_REF_PREFIX = "layer-";
    private static final String SOURCE_LABEL = "containerd.io/distribution.source.";
    private static final String LAYER_GC_LABEL = "containerd.io/gc.ref.content.l.";

    /** Slack when comparing containerd's creation times with the pull's start (same host clock). */
    private static final Duration CLOCK_SLACK = Duration.ofMillis(200);

    /** A pull being watched. */
    public final class Tracked implements AutoCloseable {
        final ProgressSink sink;
        final Instant start;
        final String sourceLabel;
        final String repository;

        /** short id -> total, for ingests taken while the layer set is unknown. */
        final Map<String, Long> seen = new HashMap<>();

        /** The pull's layers (digest -> size) once its manifest is read; null before. */
        volatile LinkedHashMap<String, Long> layers;

        final Set<String> complete = ConcurrentHashMap.newKeySet();
        final Set<String> ingested = new java.util.HashSet<>();
        final Set<String> checking = ConcurrentHashMap.newKeySet();
        volatile boolean resolving;

        /** Another tracked pull has the same repository: its manifest cannot be told apart. */
        volatile boolean shared;

        Tracked(ProgressSink sink, Instant start, ImageReference ref) {
            this.sink = sink;
            this.start = start;
            String host = ref.registry();
            int colon = host.lastIndexOf(':');
            if (colon > 0 && !host.endsWith("]")) {
                host = host.substring(0, colon); // containerd labels by host name, without the port
            }
            this.sourceLabel = SOURCE_LABEL + host;
            this.repository = ref.repository();
        }

        /**
         * @return the pull's layers (layer id to size) when its own manifest was found during the
         *         pull and no same-repository pull made it ambiguous; else null
         */
        public LinkedHashMap<String, Long> exactLayers() {
            LinkedHashMap<String, Long> l = layers;
            if (l == null || shared || l.isEmpty()) {
                return null;
            }
            LinkedHashMap<String, Long> out = new LinkedHashMap<>();
            l.forEach((digest, size) -> out.putIfAbsent(id(digest), size));
            return out;
        }

        @Override
        public void close() {
            untrack(this);
        }
    }

    private final ContentGrpc.ContentStub stub;
    private final boolean fullDigests;
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
    public ContentProgressPoller(
            Channel channel,
            String namespace,
            Duration interval,
            ScheduledExecutorService executor) {
        this(channel, namespace, interval, executor, false);
    }

    /**
     * @param channel a channel to containerd (the socket that also serves CRI)
     * @param namespace containerd namespace ({@code k8s.io} for CRI)
     * @param interval poll interval
     * @param executor where polls are scheduled
     * @param fullDigests report layers by their digest ({@code sha256:...}) rather than the 12-digit short id
     */
    public ContentProgressPoller(
            Channel channel,
            String namespace,
            Duration interval,
            ScheduledExecutorService executor,
            boolean fullDigests) {
        this.fullDigests = fullDigests;
        Metadata md = new Metadata();
        md.put(NAMESPACE_HEADER, namespace);
        this.stub =
                ContentGrpc.newStub(channel)
                        .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(md));
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
     * @param image the reference being pulled
     * @param sink where the pull's layers go
     * @return the handle; close it when the pull ends
     */
    public Tracked track(String image, ProgressSink sink) {
        Tracked t = new Tracked(sink, Instant.now(), ImageReference.parse(image));
        String why = unavailable;
        if (why != null) {
            sink.unknown(why);
            return t;
        }
        tracked.add(t);
        synchronized (this) {
            if (task == null) {
                task =
                        executor.scheduleWithFixedDelay(
                                this::poll, 0, interval.toNanos(), TimeUnit.NANOSECONDS);
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

    /** Polls once. */
    public void poll() {
        synchronized (this) {
            if (polling || tracked.isEmpty()) {
                return;
            }
            polling = true;
        }
        for (Tracked t : tracked) {
            if ((t.layers == null || t.shared) && !t.resolving) {
                resolve(t);
            }
        }
        stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                .listStatuses(
                        ListStatusesRequest.getDefaultInstance(),
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
                                    String why =
                                            "the runtime has no containerd content service, so byte progress is unknown";
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

    /** Looks for the pull's manifest among blobs containerd stored since the pull started. */
    private void resolve(Tracked t) {
        t.resolving = true;
        // containerd's filter syntax: a quoted label key, a regex in quotes; [.] avoids backslashes
        String repoRegex = "(^|,)" + t.repository.replace(".", "[.]") + "(,|$)";
        String filter = "labels.\"" + t.sourceLabel + "\"~=\"" + repoRegex + "\"";
        List<Info> found = new ArrayList<>();
        stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                .list(
                        ListContentRequest.newBuilder().addFilters(filter).build(),
                        new StreamObserver<>() {
                            @Override
                            public void onNext(ListContentResponse value) {
                                found.addAll(value.getInfoList());
                            }

                            @Override
                            public void onError(Throwable e) {
                                LOG.debug("List with {} failed: {}", filter, e.toString());
                                t.resolving = false;
                            }

                            @Override
                            public void onCompleted() {
                                List<String> manifests = new ArrayList<>();
                                Instant since = t.start.minus(CLOCK_SLACK);
                                for (Info i : found) {
                                    Instant created =
                                            Instant.ofEpochSecond(
                                                    i.getCreatedAt().getSeconds(),
                                                    i.getCreatedAt().getNanos());
                                    boolean manifest =
                                            i.getLabelsMap().keySet().stream()
                                                    .anyMatch(k -> k.startsWith(LAYER_GC_LABEL));
                                    if (manifest
                                            && !created.isBefore(since)
                                            && i.getSize() < 4 * 1024 * 1024) {
                                        manifests.add(i.getDigest());
                                    }
                                }
                                if (manifests.isEmpty()) {
                                    t.resolving =
                                            false; // not stored yet (or not new): try again next
                                    // poll
                                    return;
                                }
                                readLayers(t, manifests);
                            }
                        });
    }

    private void readLayers(Tracked t, List<String> manifests) {
        List<CompletableFuture<LinkedHashMap<String, Long>>> reads = new ArrayList<>();
        for (String m : manifests) {
            reads.add(readBlob(m).thenApply(Manifests::layersByDigest));
        }
        CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new))
                .whenComplete(
                        (v, e) -> {
                            if (e != null) {
                                LOG.debug(
                                        "reading manifests {} failed: {}", manifests, e.toString());
                                t.resolving = false;
                                return;
                            }
                            LinkedHashMap<String, Long> all = new LinkedHashMap<>();
                            reads.forEach(r -> all.putAll(r.join()));
                            // several new manifests of the repository (another tag pulled at about
                            // the same time):
                            // the live figures use their union, the final ones the pull's own
                            // manifest
                            t.shared =
                                    manifests.size() > 1
                                            || tracked.stream()
                                                    .anyMatch(
                                                            o ->
                                                                    o != t
                                                                            && o.sourceLabel.equals(
                                                                                    t.sourceLabel)
                                                                            && o.repository.equals(
                                                                                    t.repository));
                            t.layers = all;
                            t.resolving = false;
                            LOG.debug("pull of {} has layers {}", t.repository, all.keySet());
                        });
    }

    private void deliver(ListStatusesResponse response) {
        Map<String, Status> ingests = new LinkedHashMap<>();
        for (Status s : response.getStatusesList()) {
            if (s.getRef().startsWith(LAYER_REF_PREFIX)) {
                String digest =
                        s.getExpected().isEmpty()
                                ? s.getRef().substring(LAYER_REF_PREFIX.length())
                                : s.getExpected();
                ingests.put(digest, s);
            }
        }
        List<Tracked> all = new ArrayList<>(tracked);
        boolean alone = all.size() == 1;
        for (Tracked t : all) {
            synchronized (t) {
                LinkedHashMap<String, Long> layers = t.layers;
                if (layers != null) {
                    deliverKnown(t, layers, ingests);
                } else if (alone) {
                    deliverAlone(t, ingests);
                }
            }
        }
    }

    /** The pull's layers are known: each is downloading, complete or waiting. */
    private void deliverKnown(
            Tracked t, LinkedHashMap<String, Long> layers, Map<String, Status> ingests) {
        for (Map.Entry<String, Long> l : layers.entrySet()) {
            String digest = l.getKey();
            long size = l.getValue();
            Status s = ingests.get(digest);
            if (s != null) {
                t.ingested.add(digest);
                t.sink.layer(id(digest), "Downloading", s.getOffset(), size);
            } else if (t.complete.contains(digest) || t.ingested.contains(digest)) {
                t.complete.add(digest);
                t.sink.layer(id(digest), "Download complete", size, size);
            } else {
                t.sink.layer(id(digest), "Waiting", 0, size);
                if (t.checking.add(digest)) {
                    committed(digest)
                            .whenComplete(
                                    (yes, e) -> {
                                        if (Boolean.TRUE.equals(yes)) {
                                            t.complete.add(digest);
                                        }
                                        t.checking.remove(digest);
                                    });
                }
            }
        }
    }

    /** A lone pull with unknown layers takes every layer ingest as its own. */
    private void deliverAlone(Tracked t, Map<String, Status> ingests) {
        Map<String, Status> byId = new HashMap<>();
        ingests.forEach((digest, s) -> byId.put(id(digest), s));
        // completions first, so no snapshot shows new bytes beside a stale finished layer
        for (Map.Entry<String, Long> e : t.seen.entrySet()) {
            if (!byId.containsKey(e.getKey()) && e.getValue() >= 0) {
                t.sink.layer(e.getKey(), "Download complete", e.getValue(), e.getValue());
            }
        }
        for (Map.Entry<String, Status> e : byId.entrySet()) {
            Status s = e.getValue();
            long total = s.getTotal() > 0 ? s.getTotal() : -1;
            t.seen.put(e.getKey(), total);
            t.sink.layer(e.getKey(), "Downloading", s.getOffset(), total);
        }
    }

    private CompletableFuture<Boolean> committed(String digest) {
        CompletableFuture<Boolean> out = new CompletableFuture<>();
        stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                .info(
                        InfoRequest.newBuilder().setDigest(digest).build(),
                        new StreamObserver<>() {
                            @Override
                            public void onNext(InfoResponse value) {
                                out.complete(true);
                            }

                            @Override
                            public void onError(Throwable t) {
                                out.complete(false);
                            }

                            @Override
                            public void onCompleted() {
                                out.complete(true);
                            }
                        });
        return out;
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
        stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                .read(
                        ReadContentRequest.newBuilder().setDigest(digest).build(),
                        new StreamObserver<>() {
                            @Override
                            public void onNext(ReadContentResponse value) {
                                ByteString d = value.getData();
                                if (buf.size() + d.size() > 4 * 1024 * 1024) {
                                    out.completeExceptionally(
                                            new StatusRuntimeException(
                                                    io.grpc.Status.RESOURCE_EXHAUSTED
                                                            .withDescription(
                                                                    "blob "
                                                                            + digest
                                                                            + " is larger than 4 MiB; not a manifest")));
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

    /**
     * Reports a successful pull's exact layers: the ones found during the pull when they are its own,
     * else those of the manifest the runtime stored under {@code image} (read from the content store).
     *
     * @param t the pull's handle, or null when it was not tracked
     * @param info the pulled image as the runtime lists it
     * @param image the reference that was pulled
     * @param sink where the layers go
     * @return completes when reported (or when they cannot be read: nothing is reported then)
     */
    public CompletableFuture<Void> resolveFinal(
            Tracked t, io.cri4j.imagepull.ImageInfo info, String image, ProgressSink sink) {
        LinkedHashMap<String, Long> known = t == null ? null : t.exactLayers();
        if (known != null) {
            sink.layersResolved(known); // found during the pull: no need to read it again
            return CompletableFuture.completedFuture(null);
        }
        String digest = info.digestFor(image);
        if (unavailable != null || digest.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        return readBlob(digest)
                .thenCompose(
                        top -> {
                            String platform = Manifests.pickFromIndex(top);
                            return platform == null
                                    ? CompletableFuture.completedFuture(top)
                                    : readBlob(platform);
                        })
                .thenAccept(
                        manifest -> {
                            LinkedHashMap<String, Long> layers = new LinkedHashMap<>();
                            Manifests.layersByDigest(manifest)
                                    .forEach((d, size) -> layers.putIfAbsent(id(d), size));
                            if (layers.isEmpty()) {
                                throw new IllegalArgumentException("manifest has no layers");
                            }
                            sink.layersResolved(layers);
                        })
                .exceptionally(
                        e -> {
                            LOG.debug(
                                    "could not read the manifest of {} from the content store: {}",
                                    info.id(),
                                    e.toString());
                            return null;
                        });
    }

    /** A layer's id as this poller reports it: its digest, or its short id. */
    private String id(String digest) {
        return fullDigests ? digest : shortId(digest);
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

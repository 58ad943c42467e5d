package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.Timestamp;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.internal.containerd.ContentGrpc;
import io.cri4j.cri.internal.containerd.ListStatusesRequest;
import io.cri4j.cri.internal.containerd.ListStatusesResponse;
import io.cri4j.cri.internal.containerd.ReadContentRequest;
import io.cri4j.cri.internal.containerd.ReadContentResponse;
import io.cri4j.cri.internal.containerd.Status;
import io.cri4j.cri.v1.Image;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.ImageStatusResponse;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.PullImageResponse;
import io.cri4j.imagepull.internal.ContentProgressPoller;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CRI backend over a real unix socket against a gRPC server that plays containerd: CRI
 * ImageService plus the content service, whose ingest statuses the test moves forward.
 */
class CriImagePullBackendIT {

    private static final String LAYER_A = "sha256:aaaaaaaaaaaa" + "0".repeat(52);
    private static final String LAYER_B = "sha256:bbbbbbbbbbbb" + "0".repeat(52);
    private static final String MANIFEST = "sha256:" + "c".repeat(64);
    private static final String INDEX = "sha256:" + "d".repeat(64);
    private static final String OTHER_MANIFEST = "sha256:" + "e".repeat(64);

    @TempDir Path dir;

    /** containerd as the test wants it. */
    static final class Containerd {
        final AtomicReference<List<Status>> statuses = new AtomicReference<>(List.of());
        final Map<String, String> blobs = new ConcurrentHashMap<>();
        final CompletableFuture<PullImageRequest> pullRequest = new CompletableFuture<>();
        final CompletableFuture<Void> release = new CompletableFuture<>();
        final CountDownLatch pullCancelled = new CountDownLatch(1);
        final Map<String, String> namespaces = new ConcurrentHashMap<>();
        volatile boolean pulled;
        volatile String failWith;

        ImageServiceGrpc.ImageServiceImplBase images() {
            return new ImageServiceGrpc.ImageServiceImplBase() {
                @Override
                public void imageStatus(
                        ImageStatusRequest request, StreamObserver<ImageStatusResponse> response) {
                    ImageStatusResponse.Builder b = ImageStatusResponse.newBuilder();
                    if (pulled) {
                        b.setImage(
                                Image.newBuilder()
                                        .setId("sha256:" + "f".repeat(64))
                                        .addRepoTags(request.getImage().getImage())
                                        .addRepoDigests("registry.test:5000/big@" + INDEX)
                                        .setSize(400));
                    }
                    response.onNext(b.build());
                    response.onCompleted();
                }

                @Override
                public void pullImage(
                        PullImageRequest request, StreamObserver<PullImageResponse> response) {
                    pullRequest.complete(request);
                    Context.current().addListener(c -> pullCancelled.countDown(), Runnable::run);
                    release.whenComplete(
                            (v, e) -> {
                                if (failWith != null) {
                                    response.onError(
                                            io.grpc.Status.UNKNOWN
                                                    .withDescription(failWith)
                                                    .asRuntimeException());
                                    return;
                                }
                                pulled = true;
                                response.onNext(
                                        PullImageResponse.newBuilder()
                                                .setImageRef("sha256:" + "f".repeat(64))
                                                .build());
                                response.onCompleted();
                            });
                }
            };
        }

        io.grpc.ServerServiceDefinition content() {
            ContentGrpc.ContentImplBase impl =
                    new ContentGrpc.ContentImplBase() {
                        @Override
                        public void listStatuses(
                                ListStatusesRequest request,
                                StreamObserver<ListStatusesResponse> response) {
                            response.onNext(
                                    ListStatusesResponse.newBuilder()
                                            .addAllStatuses(statuses.get())
                                            .build());
                            response.onCompleted();
                        }

                        @Override
                        public void read(
                                ReadContentRequest request,
                                StreamObserver<ReadContentResponse> response) {
                            String blob = blobs.get(request.getDigest());
                            if (blob == null) {
                                response.onError(
                                        io.grpc.Status.NOT_FOUND
                                                .withDescription(
                                                        "content digest "
                                                                + request.getDigest()
                                                                + ": not found")
                                                .asRuntimeException());
                                return;
                            }
                            byte[] b = blob.getBytes(StandardCharsets.UTF_8);
                            // in two chunks, as a big blob would come
                            response.onNext(
                                    ReadContentResponse.newBuilder()
                                            .setOffset(0)
                                            .setData(ByteString.copyFrom(b, 0, b.length / 2))
                                            .build());
                            response.onNext(
                                    ReadContentResponse.newBuilder()
                                            .setOffset(b.length / 2)
                                            .setData(
                                                    ByteString.copyFrom(
                                                            b,
                                                            b.length / 2,
                                                            b.length - b.length / 2))
                                            .build());
                            response.onCompleted();
                        }
                    };
            ServerInterceptor ns =
                    new ServerInterceptor() {
                        @Override
                        public <Q, R> ServerCall.Listener<Q> interceptCall(
                                ServerCall<Q, R> call,
                                Metadata headers,
                                ServerCallHandler<Q, R> next) {
                            String v = headers.get(ContentProgressPoller.NAMESPACE_HEADER);
                            namespaces.put(
                                    call.getMethodDescriptor().getFullMethodName(),
                                    v == null ? "<none>" : v);
                            return Contexts.interceptCall(Context.current(), call, headers, next);
                        }
                    };
            return ServerInterceptors.intercept(impl, ns);
        }
    }

    private static Status ingest(String digest, long offset, long total) {
        Instant now = Instant.now();
        return Status.newBuilder()
                .setRef("layer-" + digest)
                .setExpected(digest)
                .setOffset(offset)
                .setTotal(total)
                .setStartedAt(Timestamp.newBuilder().setSeconds(now.getEpochSecond()))
                .setUpdatedAt(Timestamp.newBuilder().setSeconds(now.getEpochSecond()))
                .build();
    }

    @Test
    void reportsContainerdByteProgressAndExactLayersFromTheManifest() throws Exception {
        Containerd ctrd = new Containerd();
        ctrd.blobs.put(
                INDEX,
                "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
                        + "\"manifests\":[{\"digest\":\""
                        + OTHER_MANIFEST
                        + "\",\"size\":1,\"platform\":"
                        + "{\"os\":\"linux\",\"architecture\":\"s390x-not-this\"}},"
                        + "{\"digest\":\""
                        + MANIFEST
                        + "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":\""
                        + io.cri4j.imagepull.internal.Manifests.goArch()
                        + "\"}}]}");
        ctrd.blobs.put(
                MANIFEST,
                "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:"
                        + "f".repeat(64)
                        + "\",\"size\":50},\"layers\":[{\"digest\":\""
                        + LAYER_A
                        + "\",\"size\":100},"
                        + "{\"digest\":\""
                        + LAYER_B
                        + "\",\"size\":300}]}");
        CriEndpoint endpoint = CriEndpoint.unix(dir.resolve("containerd.sock"));
        try (CriServer server =
                        CriServer.builder(endpoint)
                                .addService(ctrd.images())
                                .addService(ctrd.content())
                                .build()
                                .start();
                ImagePuller puller =
                        ImagePuller.builder(
                                        CriImagePullBackend.builder(endpoint)
                                                .pollInterval(java.time.Duration.ofMillis(20))
                                                .build())
                                .build()) {
            PullJob job =
                    puller.pull(
                            PullRequest.of("registry.test:5000/big:1")
                                    .withCredentials(
                                            List.of(
                                                    RegistryCredential.basic(
                                                            "registry.test:5000", "alice", "pw"))));
            ProgressWatch watch = new ProgressWatch(job);
            PullImageRequest req = ctrd.pullRequest.get(5, TimeUnit.SECONDS);
            assertThat(req.getImage().getImage()).isEqualTo("registry.test:5000/big:1");
            assertThat(req.getAuth().getUsername()).isEqualTo("alice");
            assertThat(req.getAuth().getPassword()).isEqualTo("pw");
            assertThat(req.getAuth().getServerAddress())
                    .as("containerd parses it as a URL; left empty")
                    .isEmpty();

            ctrd.statuses.set(List.of(ingest(LAYER_A, 50, 100)));
            PullProgress p1 = watch.await("layer a half done", p -> p.bytesDone() == 50);
            assertThat(p1.percent()).isEqualTo(50);
            assertThat(p1.layers())
                    .containsExactly(new LayerProgress("aaaaaaaaaaaa", "Downloading", 50, 100));

            ctrd.statuses.set(List.of(ingest(LAYER_A, 100, 100), ingest(LAYER_B, 30, 300)));
            PullProgress p2 = watch.await("layer b started", p -> p.bytesDone() == 130);
            assertThat(p2.bytesTotal()).isEqualTo(400);
            assertThat(p2.percent())
                    .as("new layer raised the total; the bar waits, it does not go back")
                    .isEqualTo(50);

            ctrd.statuses.set(List.of(ingest(LAYER_B, 250, 300)));
            PullProgress p3 = watch.await("layer a committed", p -> p.bytesDone() == 350);
            assertThat(p3.percent()).isEqualTo(87);
            assertThat(p3.layers().get(0))
                    .isEqualTo(new LayerProgress("aaaaaaaaaaaa", "Download complete", 100, 100));
            assertThat(p3.bytesPerSecond())
                    .as("rate needs 250 ms of samples")
                    .isGreaterThanOrEqualTo(0);

            ctrd.statuses.set(List.of());
            ctrd.release.complete(null);
            PullResult r = job.result().get(10, TimeUnit.SECONDS);
            assertThat(r.imageId()).isEqualTo("sha256:" + "f".repeat(64));
            assertThat(r.digest()).isEqualTo(INDEX);
            assertThat(r.attempts()).isEqualTo(1);
            PullProgress last =
                    watch.await("success", p -> p.phase() == PullProgress.Phase.SUCCEEDED);
            assertThat(last.percent()).isEqualTo(100);
            assertThat(last.layers())
                    .containsExactly(
                            new LayerProgress("aaaaaaaaaaaa", "Complete", 100, 100),
                            new LayerProgress("bbbbbbbbbbbb", "Complete", 300, 300));
            assertThat(last.bytesDone()).isEqualTo(400).isEqualTo(last.bytesTotal());
            watch.assertMonotonic();
            puller.close();
            Threads.assertNoneLeft();
            assertThat(ctrd.namespaces)
                    .containsEntry("containerd.services.content.v1.Content/ListStatuses", "k8s.io")
                    .containsEntry("containerd.services.content.v1.Content/Read", "k8s.io");
        }
    }

    @Test
    void fallsBackToV1alpha2AndSaysProgressIsUnknownWithoutAContentService() throws Exception {
        CriEndpoint endpoint = CriEndpoint.unix(dir.resolve("old.sock"));
        CompletableFuture<Void> release = new CompletableFuture<>();
        io.cri4j.cri.v1alpha2.ImageServiceGrpc.ImageServiceImplBase old =
                new io.cri4j.cri.v1alpha2.ImageServiceGrpc.ImageServiceImplBase() {
                    volatile boolean present;

                    @Override
                    public void imageStatus(
                            io.cri4j.cri.v1alpha2.ImageStatusRequest request,
                            StreamObserver<io.cri4j.cri.v1alpha2.ImageStatusResponse> response) {
                        var b = io.cri4j.cri.v1alpha2.ImageStatusResponse.newBuilder();
                        if (present) {
                            b.setImage(
                                    io.cri4j.cri.v1alpha2.Image.newBuilder()
                                            .setId("sha256:0ld")
                                            .setSize(7)
                                            .addRepoDigests(
                                                    "docker.io/library/busybox@sha256:0ldd"));
                        }
                        response.onNext(b.build());
                        response.onCompleted();
                    }

                    @Override
                    public void pullImage(
                            io.cri4j.cri.v1alpha2.PullImageRequest request,
                            StreamObserver<io.cri4j.cri.v1alpha2.PullImageResponse> response) {
                        release.whenComplete(
                                (v, e) -> {
                                    present = true;
                                    response.onNext(
                                            io.cri4j.cri.v1alpha2.PullImageResponse.newBuilder()
                                                    .setImageRef("sha256:0ld")
                                                    .build());
                                    response.onCompleted();
                                });
                    }
                };
        try (CriServer server = CriServer.builder(endpoint).addService(old).build().start();
                ImagePuller puller =
                        ImagePuller.builder(CriImagePullBackend.builder(endpoint).build())
                                .build()) {
            PullJob job = puller.pull("busybox");
            ProgressWatch watch = new ProgressWatch(job);
            PullProgress unknown =
                    watch.await(
                            "unknown percent",
                            p ->
                                    p.phase() == PullProgress.Phase.PULLING
                                            && !p.percentKnown()
                                            && p.message()
                                                    .contains("no containerd content service"));
            assertThat(unknown.percent()).isEqualTo(-1);
            release.complete(null);
            PullResult r = job.result().get(10, TimeUnit.SECONDS);
            assertThat(r.imageId()).isEqualTo("sha256:0ld");
            assertThat(r.digest()).isEqualTo("sha256:0ldd");
            assertThat(watch.await("success", p -> p.phase().terminal()).percent()).isEqualTo(100);
            assertThat(watch.all)
                    .extracting(PullProgress::percent)
                    .as("never a made-up figure")
                    .containsOnly(0, -1, 100);
        }
    }

    @Test
    void cancelReachesTheRuntimeWithinASecond() throws Exception {
        Containerd ctrd = new Containerd();
        CriEndpoint endpoint = CriEndpoint.unix(dir.resolve("c.sock"));
        try (CriServer server =
                        CriServer.builder(endpoint)
                                .addService(ctrd.images())
                                .addService(ctrd.content())
                                .build()
                                .start();
                ImagePuller puller =
                        ImagePuller.builder(CriImagePullBackend.builder(endpoint).build())
                                .build()) {
            PullJob job = puller.pull("registry.test:5000/big:2");
            ctrd.pullRequest.get(5, TimeUnit.SECONDS);
            job.cancel();
            assertThat(ctrd.pullCancelled.await(1, TimeUnit.SECONDS))
                    .as("runtime saw the cancellation")
                    .isTrue();
        }
    }

    @Test
    void aRuntimeErrorFailsWithImageAndCause() throws Exception {
        Containerd ctrd = new Containerd();
        ctrd.failWith = "failed to resolve reference \"registry.test:5000/nope:1\": not found";
        ctrd.release.complete(null);
        CriEndpoint endpoint = CriEndpoint.unix(dir.resolve("e.sock"));
        try (CriServer server =
                        CriServer.builder(endpoint)
                                .addService(ctrd.images())
                                .addService(ctrd.content())
                                .build()
                                .start();
                ImagePuller puller =
                        ImagePuller.builder(CriImagePullBackend.builder(endpoint).build())
                                .defaultPolicy(PullPolicy.defaults().withBackoffLimit(0))
                                .build()) {
            PullJob job = puller.pull("registry.test:5000/nope:1");
            try {
                job.result().get(10, TimeUnit.SECONDS);
                throw new AssertionError("pull succeeded");
            } catch (ExecutionException e) {
                assertThat(e.getCause())
                        .isInstanceOf(ImagePullException.class)
                        .hasMessage(
                                "pulling registry.test:5000/nope:1 failed after 1 attempt: UNKNOWN: failed to resolve reference"
                                        + " \"registry.test:5000/nope:1\": not found");
            }
        }
    }

    @Test
    void anUnreachableRuntimeIsNamedWithTheRootCause() throws Exception {
        CriEndpoint endpoint = CriEndpoint.unix(dir.resolve("nobody.sock"));
        try (ImagePuller puller =
                ImagePuller.builder(CriImagePullBackend.builder(endpoint).build())
                        .defaultPolicy(PullPolicy.defaults().withBackoffLimit(0))
                        .build()) {
            try {
                puller.pull("busybox").result().get(30, TimeUnit.SECONDS);
                throw new AssertionError("pull succeeded");
            } catch (ExecutionException e) {
                assertThat(e.getCause())
                        .hasMessage(
                                "pulling busybox failed after 1 attempt: runtime at "
                                        + endpoint
                                        + " is unreachable: UNAVAILABLE: io exception (no such file or directory)");
            }
        }
    }

    @Test
    void imageStatusAnswersPresence() throws Exception {
        Containerd ctrd = new Containerd();
        CriEndpoint endpoint = CriEndpoint.unix(dir.resolve("s.sock"));
        try (CriServer server =
                        CriServer.builder(endpoint).addService(ctrd.images()).build().start();
                CriImagePullBackend backend = CriImagePullBackend.builder(endpoint).build()) {
            assertThat(backend.imageStatus("x:1").get(5, TimeUnit.SECONDS))
                    .isEqualTo(Optional.empty());
            ctrd.pulled = true;
            assertThat(backend.imageStatus("x:1").get(5, TimeUnit.SECONDS))
                    .get()
                    .extracting(ImageInfo::size)
                    .isEqualTo(400L);
        }
    }
}

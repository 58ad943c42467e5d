package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveImageRequest;
import io.cri4j.imagepull.PullObserver;
import io.cri4j.imagepull.PullProgressServer;
import io.cri4j.imagepull.v1.ImagePullProgress;
import io.cri4j.imagepull.v1.Phase;
import io.cri4j.imagepull.v1.PullProgressGrpc;
import io.cri4j.imagepull.v1.WatchRequest;
import io.cri4j.testing.real.GrpcGoClient;
import io.cri4j.testing.real.LocalRegistry;
import io.cri4j.testing.real.PushedImage;
import io.cri4j.testing.real.TestImage;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Observed pulls on a real containerd, written once: kubelet's gRPC stack (grpc-go, {@link GrpcGoClient})
 * pulls through the proxy from a real registry while watchers read the progress the proxy serves, over
 * HTTP (KEP-5334's newline-delimited JSON) and over {@code cri4j.imagepull.v1.PullProgress/Watch} on the
 * proxy's socket. A subclass names the containerd (1.6 in {@link PullProgressContainerdIT}, 2.1.4 in
 * {@link PullProgressContainerd2IT}).
 */
abstract class PullProgressContainerdTests {

    private static final long LARGE = 256L << 20;

    /** containerd's CRI socket. */
    abstract CriEndpoint containerd();

    /** The registry containerd pulls from. */
    abstract LocalRegistry registry();

    /** Whether this containerd serves {@code runtime.v1alpha2} (1.6 does, 2.x does not). */
    boolean servesV1alpha2() {
        return true;
    }

    private Path dir;
    private PullObserver observer;
    private CriProxy proxy;
    private PullProgressServer server;
    private ManagedChannel direct;
    private ManagedChannel viaProxy;
    private GrpcGoClient go;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeEach
    void start() throws Exception {
        dir = Files.createTempDirectory("cri4j-pullprogress");
        go = GrpcGoClient.build(Path.of("target/grpcgo"));
        observer = PullObserver.builder(containerd()).pollInterval(Duration.ofMillis(100)).build();
        proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(containerd())
                        .observePulls(observer)
                        .build()
                        .start();
        server = PullProgressServer.builder(observer).build().start();
        direct = CriChannels.newChannel(containerd());
        viaProxy = CriChannels.newChannel(proxy.listenEndpoint());
    }

    @AfterEach
    void stop() throws Exception {
        viaProxy.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        direct.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.close();
        proxy.close();
        observer.close();
        Files.deleteIfExists(dir.resolve("proxy.sock"));
        Files.deleteIfExists(dir);
    }

    private void removeImage(String ref) {
        var stub = ImageServiceGrpc.newBlockingStub(direct).withDeadlineAfter(30, TimeUnit.SECONDS);
        var st =
                stub.imageStatus(
                        ImageStatusRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(ref))
                                .build());
        if (st.hasImage() && !st.getImage().getId().isEmpty()) {
            stub.removeImage(
                    RemoveImageRequest.newBuilder()
                            .setImage(ImageSpec.newBuilder().setImage(ref))
                            .build());
        }
    }

    /** kubelet's PullImage through the proxy: grpc-go in a process of its own. */
    private CompletableFuture<GrpcGoClient.Run> kubeletPull(String ref) {
        return kubeletPull(ref, "runtime.v1");
    }

    /** @param api {@code runtime.v1}, or {@code runtime.v1alpha2} as kubelets before 1.26 may call */
    private CompletableFuture<GrpcGoClient.Run> kubeletPull(String ref, String api) {
        byte[] request =
                PullImageRequest.newBuilder()
                        .setImage(ImageSpec.newBuilder().setImage(ref))
                        .build()
                        .toByteArray();
        return CompletableFuture.supplyAsync(
                () ->
                        go.call(
                                proxy.listenEndpoint(),
                                "/" + api + ".ImageService/PullImage",
                                request,
                                1));
    }

    /** Opens {@code GET /imagePullProgress?image=REF}; the answer's head comes before any pull. */
    private HttpResponse<Stream<String>> watchHttp(String ref) throws Exception {
        return http.send(
                HttpRequest.newBuilder(
                                server.baseUrl()
                                        .resolve(
                                                "/imagePullProgress?image="
                                                        + URLEncoder.encode(
                                                                ref, StandardCharsets.UTF_8)))
                        .timeout(Duration.ofSeconds(120))
                        .build(),
                HttpResponse.BodyHandlers.ofLines());
    }

    private static List<JsonObject> readAll(HttpResponse<Stream<String>> r) {
        List<JsonObject> out = new ArrayList<>();
        try (Stream<String> body = r.body()) {
            body.forEach(l -> out.add(JsonParser.parseString(l).getAsJsonObject()));
        }
        return out;
    }

    /** The Watch RPC on the proxy's own socket, collected. */
    static final class GrpcWatch implements StreamObserver<ImagePullProgress> {
        final List<ImagePullProgress> all = new CopyOnWriteArrayList<>();
        final CountDownLatch done = new CountDownLatch(1);
        volatile Throwable error;

        @Override
        public void onNext(ImagePullProgress value) {
            all.add(value);
        }

        @Override
        public void onError(Throwable t) {
            error = t;
            done.countDown();
        }

        @Override
        public void onCompleted() {
            done.countDown();
        }
    }

    private GrpcWatch watchGrpc(String ref) {
        GrpcWatch w = new GrpcWatch();
        PullProgressGrpc.newStub(viaProxy)
                .watch(WatchRequest.newBuilder().setImage(ref).build(), w);
        return w;
    }

    private static Map<String, Long> layersOf(PushedImage image) {
        Map<String, Long> m = new LinkedHashMap<>();
        image.layers().forEach(l -> m.put(l.digest(), l.size()));
        return m;
    }

    /** The last total each layer's lines gave. */
    private static Map<String, Long> layerTotals(List<JsonObject> lines) {
        Map<String, Long> m = new LinkedHashMap<>();
        lines.stream()
                .filter(o -> o.has("layer"))
                .forEach(o -> m.put(o.get("layer").getAsString(), o.get("total").getAsLong()));
        return m;
    }

    private static List<JsonObject> imageLines(List<JsonObject> lines) {
        return lines.stream().filter(o -> !o.has("layer")).toList();
    }

    /** Checks a finished stream of a successful pull of {@code image}. */
    private static void assertRoseTo100(PushedImage image, List<JsonObject> lines) {
        List<JsonObject> images = imageLines(lines);
        List<Integer> percents = images.stream().map(o -> o.get("percent").getAsInt()).toList();
        assertThat(percents).as("percents of %s", image.reference()).isSorted();
        assertThat(percents.get(0)).isLessThan(10);
        JsonObject last = lines.get(lines.size() - 1);
        assertThat(last.has("layer")).as("the stream ends with the image's line").isFalse();
        assertThat(last.get("percent").getAsInt()).isEqualTo(100);
        assertThat(last.get("phase").getAsString()).isEqualTo("succeeded");
        assertThat(last.get("total").getAsLong()).isEqualTo(image.layersSize());
        assertThat(last.get("progress").getAsLong()).isEqualTo(image.layersSize());
        assertThat(layerTotals(lines))
                .as("layers and their sizes as the registry serves them")
                .isEqualTo(layersOf(image));
    }

    @Test
    void largeImagePulledByGrpcGoRisesMonotonicallyTo100WhileWatchersRead() throws Exception {
        PushedImage image = registry().push(TestImage.large(LARGE));
        removeImage(image.reference());
        HttpResponse<Stream<String>> http = watchHttp(image.reference());
        assertThat(http.statusCode()).isEqualTo(200);
        GrpcWatch grpc = watchGrpc(image.reference());

        GrpcGoClient.Run run = kubeletPull(image.reference()).get(3, TimeUnit.MINUTES);
        assertThat(run.ok()).as(run.output()).isTrue();

        List<JsonObject> lines = readAll(http);
        assertRoseTo100(image, lines);
        List<JsonObject> images = imageLines(lines);
        assertThat(images)
                .as("bytes seen moving between 0 and the total")
                .anyMatch(
                        o ->
                                o.get("progress").getAsLong() > 0
                                        && o.get("progress").getAsLong() < LARGE);
        assertThat(
                        images.stream()
                                .map(o -> o.get("percent").getAsInt())
                                .filter(p -> p > 0 && p < 100)
                                .distinct()
                                .count())
                .as("intermediate percents")
                .isGreaterThan(1);
        System.out.printf(
                "%s: %d lines, percents %s%n",
                image.reference(),
                lines.size(),
                images.stream().map(o -> o.get("percent").getAsInt()).distinct().toList());

        assertThat(grpc.done.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(grpc.error).isNull();
        ImagePullProgress lastGrpc = grpc.all.get(grpc.all.size() - 1);
        assertThat(lastGrpc.getPhase()).isEqualTo(Phase.PHASE_SUCCEEDED);
        assertThat(lastGrpc.getPercent()).isEqualTo(100);
        assertThat(lastGrpc.getTotal()).isEqualTo(image.layersSize());
        Map<String, Long> grpcLayers = new LinkedHashMap<>();
        lastGrpc.getLayersList().forEach(l -> grpcLayers.put(l.getLayer(), l.getTotal()));
        assertThat(grpcLayers).isEqualTo(layersOf(image));
        assertThat(grpc.all.stream().map(ImagePullProgress::getPercent).toList()).isSorted();
    }

    @Test
    void concurrentPullsOfTheSameImageAndOfDifferentImages() throws Exception {
        // the same image twice at once (kubelet with serialized image pulls off): one stream, exact
        // figures; one of the calls in runtime.v1alpha2 where containerd serves it (followed alike)
        PushedImage a = registry().push(TestImage.large());
        removeImage(a.reference());
        HttpResponse<Stream<String>> same = watchHttp(a.reference());
        CompletableFuture<GrpcGoClient.Run> p1 = kubeletPull(a.reference());
        CompletableFuture<GrpcGoClient.Run> p2 =
                kubeletPull(a.reference(), servesV1alpha2() ? "runtime.v1alpha2" : "runtime.v1");
        assertThat(p1.get(3, TimeUnit.MINUTES).ok()).as(p1.get().output()).isTrue();
        assertThat(p2.get(3, TimeUnit.MINUTES).ok()).as(p2.get().output()).isTrue();
        assertRoseTo100(a, readAll(same));
        awaitTrue(() -> observer.pulls().stream().allMatch(p -> p.phase().terminal()));
        assertThat(observer.pulls())
                .filteredOn(p -> p.image().equals(a.reference()))
                .isNotEmpty()
                .allSatisfy(
                        p -> {
                            assertThat(p.percent()).isEqualTo(100);
                            assertThat(p.bytesTotal()).isEqualTo(a.layersSize());
                        });

        // two different images at once: each stream has its own layers and bytes only
        PushedImage big = registry().push(TestImage.large(LARGE));
        PushedImage b = registry().push(TestImage.busyboxDocker());
        removeImage(big.reference());
        removeImage(b.reference());
        HttpResponse<Stream<String>> wa = watchHttp(big.reference());
        HttpResponse<Stream<String>> wb = watchHttp(b.reference());
        CompletableFuture<GrpcGoClient.Run> pa = kubeletPull(big.reference());
        CompletableFuture<GrpcGoClient.Run> pb = kubeletPull(b.reference());
        assertThat(pa.get(3, TimeUnit.MINUTES).ok()).as(pa.get().output()).isTrue();
        assertThat(pb.get(3, TimeUnit.MINUTES).ok()).as(pb.get().output()).isTrue();
        assertRoseTo100(big, readAll(wa));
        assertRoseTo100(b, readAll(wb));
    }

    @Test
    void failingPullsEndTheirStreamWithAnErrorNamingTheCause() throws Exception {
        PushedImage busybox = registry().push(TestImage.busybox());
        String missing =
                busybox.reference().substring(0, busybox.reference().lastIndexOf(':'))
                        + ":no-such-tag";
        HttpResponse<Stream<String>> w = watchHttp(missing);
        GrpcWatch grpc = watchGrpc(missing);
        GrpcGoClient.Run run = kubeletPull(missing).get(2, TimeUnit.MINUTES);
        assertThat(run.ok()).isFalse();
        List<JsonObject> lines = readAll(w);
        JsonObject last = lines.get(lines.size() - 1);
        assertThat(last.get("phase").getAsString()).isEqualTo("failed");
        assertThat(last.get("error").getAsString()).contains("no-such-tag").contains("not found");
        assertThat(grpc.done.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(grpc.all.get(grpc.all.size() - 1).getError()).contains("not found");

        removeImage(busybox.reference());
        registry().stop();
        HttpResponse<Stream<String>> down = watchHttp(busybox.reference());
        GrpcGoClient.Run refused = kubeletPull(busybox.reference()).get(2, TimeUnit.MINUTES);
        assertThat(refused.ok()).isFalse();
        List<JsonObject> downLines = readAll(down);
        JsonObject end = downLines.get(downLines.size() - 1);
        assertThat(end.get("phase").getAsString()).isEqualTo("failed");
        assertThat(end.get("error").getAsString()).contains("connection refused");
        assertThat(end.get("percent").getAsInt()).isLessThan(100);
    }

    @Test
    void watchersThatGoAwayMidStreamLeaveNothingBehind() throws Exception {
        PushedImage image = registry().push(TestImage.large());
        // warm up: a watch of each kind, so JVM-wide pools are there before the baseline
        removeImage(image.reference());
        HttpResponse<Stream<String>> warm = watchHttp(image.reference());
        GrpcWatch warmGrpc = watchGrpc(image.reference());
        assertThat(kubeletPull(image.reference()).get(3, TimeUnit.MINUTES).ok()).isTrue();
        readAll(warm);
        assertThat(warmGrpc.done.await(30, TimeUnit.SECONDS)).isTrue();
        awaitTrue(() -> observer.watchers() == 0);
        int threads = Thread.activeCount();
        int fds = fds();

        removeImage(image.reference());
        Context.CancellableContext cancellable = Context.current().withCancellation();
        GrpcWatch grpc = cancellable.call(() -> watchGrpc(image.reference()));
        try (Socket s = new Socket()) {
            s.connect(server.address(), 5000);
            s.setSoTimeout(60_000);
            OutputStream out = s.getOutputStream();
            out.write(
                    ("GET /imagePullProgress?image="
                                    + URLEncoder.encode(image.reference(), StandardCharsets.UTF_8)
                                    + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            CompletableFuture<GrpcGoClient.Run> pull = kubeletPull(image.reference());
            BufferedReader in =
                    new BufferedReader(
                            new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            String line;
            boolean moving = false;
            while (!moving && (line = in.readLine()) != null) {
                moving = line.contains("\"progress\":") && !line.contains("\"progress\":0,");
            }
            assertThat(moving).as("bytes were moving when the watchers left").isTrue();
            cancellable.cancel(null); // the gRPC watcher goes away too
            s.close();
            assertThat(pull.get(3, TimeUnit.MINUTES).ok()).isTrue();
        }
        assertThat(grpc.done.await(30, TimeUnit.SECONDS)).isTrue();
        awaitTrue(
                () ->
                        observer.watchers() == 0
                                && Thread.activeCount() <= threads + 2
                                && fds() <= fds + 4);
        assertThat(observer.watchers()).as("watches left open").isZero();
        assertThat(Thread.activeCount()).as("threads").isLessThanOrEqualTo(threads + 2);
        assertThat(fds()).as("open fds").isLessThanOrEqualTo(fds + 4);
    }

    static int fds() {
        String[] names = new File("/proc/self/fd").list();
        return names == null ? -1 : names.length;
    }

    static void awaitTrue(java.util.function.BooleanSupplier condition)
            throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean() && System.nanoTime() < end) {
            TimeUnit.MILLISECONDS.sleep(50);
        }
    }
}

package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.streaming.StreamAuthorizer;
import io.cri4j.streaming.StreamKind;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.ManagedChannel;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The HTTP side of observed pulls with the JDK's HTTP client: the list, the newline-delimited JSON stream
 * of one pull and of every pull in KEP-5334's shape, the page, the authorizer hook, the bounds and the
 * HTTP errors, and a watcher that goes away mid-stream leaving no watch behind.
 */
@org.junit.jupiter.api.Timeout(
        value = 120,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
class PullProgressServerIT {

    @TempDir Path dir;
    private FakeCriServer fake;
    private ManagedChannel channel;
    private PullObserver observer;
    private PullProgressServer server;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final List<StreamAuthorizer.Request> asked = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws Exception {
        fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                        .pullRate(32L << 20)
                        .build()
                        .start();
        channel = fake.newChannel();
        observer =
                PullObserver.builder(fake.endpoint())
                        .pollInterval(Duration.ofMillis(50))
                        .maxWatchers(2)
                        .build();
        server =
                PullProgressServer.builder(observer)
                        .authorizer(
                                r -> {
                                    asked.add(r);
                                    return !r.headers().containsKey("x-refuse");
                                })
                        .build()
                        .start();
    }

    @AfterEach
    void stop() throws Exception {
        server.close();
        observer.close();
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        fake.close();
    }

    private URI uri(String pathAndQuery) {
        return server.baseUrl().resolve(pathAndQuery);
    }

    private static String q(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private HttpResponse<Stream<String>> lines(String pathAndQuery) throws Exception {
        return http.send(
                HttpRequest.newBuilder(uri(pathAndQuery)).timeout(Duration.ofSeconds(60)).build(),
                HttpResponse.BodyHandlers.ofLines());
    }

    private HttpResponse<String> get(HttpRequest.Builder b) throws Exception {
        return http.send(
                b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void streamsOnePullAsKepObjectsUntilItEndsThenListsIt() throws Exception {
        String image = "registry.example/team/app:2.0";
        CompletableFuture<HttpResponse<Stream<String>>> watcher =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return lines("/imagePullProgress?image=" + q(image));
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        });
        HttpResponse<Stream<String>> r =
                watcher.get(10, TimeUnit.SECONDS); // headers come before the pull
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("content-type")).hasValue("application/x-ndjson");
        ObservedPulls.pull(observer, channel, image);
        List<JsonObject> objects = new ArrayList<>();
        try (Stream<String> body = r.body()) {
            body.forEach(l -> objects.add(JsonParser.parseString(l).getAsJsonObject()));
        }
        List<JsonObject> images = objects.stream().filter(o -> !o.has("layer")).toList();
        List<JsonObject> layers = objects.stream().filter(o -> o.has("layer")).toList();
        assertThat(images)
                .allSatisfy(
                        o -> {
                            assertThat(o.get("image").getAsString()).isEqualTo(image);
                            assertThat(o.get("name").getAsString()).isEqualTo(image);
                        });
        List<Integer> percents = images.stream().map(o -> o.get("percent").getAsInt()).toList();
        assertThat(percents).isSorted();
        assertThat(percents.get(0)).isLessThan(10);
        JsonObject last = objects.get(objects.size() - 1);
        assertThat(last.has("layer")).as("the stream ends with the image's line").isFalse();
        assertThat(last.get("phase").getAsString()).isEqualTo("succeeded");
        assertThat(last.get("percent").getAsInt()).isEqualTo(100);
        assertThat(last.has("error")).isFalse();
        assertThat(layers)
                .isNotEmpty()
                .allSatisfy(
                        o -> {
                            assertThat(o.get("layer").getAsString()).matches("sha256:[0-9a-f]{64}");
                            assertThat(o.get("name").getAsString())
                                    .isEqualTo(o.get("layer").getAsString());
                        });
        long layerTotal =
                layers.stream()
                        .collect(
                                java.util.stream.Collectors.toMap(
                                        o -> o.get("layer").getAsString(),
                                        o -> o.get("total").getAsLong(),
                                        (a, b) -> b))
                        .values()
                        .stream()
                        .mapToLong(Long::longValue)
                        .sum();
        assertThat(last.get("total").getAsLong())
                .isEqualTo(layerTotal)
                .isEqualTo(last.get("progress").getAsLong());

        HttpResponse<String> list = get(HttpRequest.newBuilder(uri("/imagePullProgress")));
        assertThat(list.statusCode()).isEqualTo(200);
        JsonArray pulls =
                JsonParser.parseString(list.body()).getAsJsonObject().getAsJsonArray("pulls");
        assertThat(pulls).hasSize(1);
        JsonObject listed = pulls.get(0).getAsJsonObject();
        assertThat(listed.get("percent").getAsInt()).isEqualTo(100);
        assertThat(listed.getAsJsonArray("layers"))
                .hasSize(
                        (int)
                                layers.stream()
                                        .map(o -> o.get("layer").getAsString())
                                        .distinct()
                                        .count());
        assertThat(asked)
                .extracting(StreamAuthorizer.Request::kind)
                .containsOnly(StreamKind.IMAGE_PULL_PROGRESS);
        assertThat(asked).extracting(StreamAuthorizer.Request::targetId).containsExactly(image, "");
    }

    @Test
    void followStreamsEveryPullAndAFailedOneEndsWithItsError() throws Exception {
        HttpResponse<Stream<String>> r = lines("/imagePullProgress?follow=true");
        fake.faults()
                .on("PullImage")
                .failNext(
                        1,
                        io.grpc.Status.UNKNOWN.withDescription(
                                "failed to pull and unpack image \"registry.example/gone:1\": not found"));
        ObservedPulls.pull(observer, channel, "registry.example/gone:1");
        Iterator<String> it = r.body().iterator();
        JsonObject failed = null;
        while (it.hasNext()) {
            JsonObject o = JsonParser.parseString(it.next()).getAsJsonObject();
            assertThat(o.has("layer") || !o.get("phase").getAsString().equals("succeeded"))
                    .as("the pull failed, it did not succeed: %s", o)
                    .isTrue();
            if (!o.has("layer") && o.get("phase").getAsString().equals("failed")) {
                failed = o;
                break;
            }
        }
        assertThat(failed).isNotNull();
        assertThat(failed.get("error").getAsString()).contains("not found");
        CompletableFuture<String> next =
                ObservedPulls.pull(observer, channel, "registry.example/next:1");
        JsonObject nextEnd = null;
        while (nextEnd == null && it.hasNext()) { // the follow stream does not end: ask for no more
            JsonObject o = JsonParser.parseString(it.next()).getAsJsonObject();
            if (!o.has("layer")
                    && o.get("image").getAsString().equals("registry.example/next:1")
                    && !o.get("phase").getAsString().equals("pulling")) {
                nextEnd = o;
            }
        }
        assertThat(next).succeedsWithin(60, TimeUnit.SECONDS);
        assertThat(nextEnd).as("the follow stream went on with the next pull").isNotNull();
        assertThat(nextEnd.get("phase").getAsString()).as("%s", nextEnd).isEqualTo("succeeded");
        r.body().close();
    }

    @Test
    void servesThePageAndRefusesWhatItShould() throws Exception {
        HttpResponse<String> page = get(HttpRequest.newBuilder(uri("/")));
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.headers().firstValue("content-type")).hasValue("text/html; charset=utf-8");
        assertThat(page.body()).contains("<script>").contains("imagePullProgress");

        HttpResponse<String> refused =
                get(HttpRequest.newBuilder(uri("/imagePullProgress")).header("X-Refuse", "1"));
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(refused.body()).contains("not authorized");
        assertThat(get(HttpRequest.newBuilder(uri("/other"))).statusCode()).isEqualTo(404);
        HttpResponse<String> post =
                get(
                        HttpRequest.newBuilder(uri("/imagePullProgress"))
                                .POST(HttpRequest.BodyPublishers.noBody()));
        assertThat(post.statusCode()).isEqualTo(405);
        assertThat(post.headers().firstValue("allow")).hasValue("GET");

        assertThatThrownBy(
                        () ->
                                PullProgressServer.builder(observer)
                                        .bindAddress(new InetSocketAddress("0.0.0.0", 0))
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not a loopback address");
    }

    @Test
    void tooManyStreamsAnswer503AndAWatcherThatGoesAwayLeavesNoWatch() throws Exception {
        try (Socket a = new Socket();
                Socket b = new Socket()) {
            for (Socket s : List.of(a, b)) {
                s.connect(server.address(), 5000);
                s.setSoTimeout(10_000);
                OutputStream out = s.getOutputStream();
                out.write(
                        ("GET /imagePullProgress?image=registry.example/never:1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                                .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                assertThat(head(s.getInputStream())).startsWith("HTTP/1.1 200");
            }
            assertThat(observer.watchers()).isEqualTo(2);
            HttpResponse<String> third =
                    get(HttpRequest.newBuilder(uri("/imagePullProgress?image=x/y:1")));
            assertThat(third.statusCode()).isEqualTo(503);
            assertThat(third.body()).contains("too many watchers");
        }
        PullObserverIT.awaitTrue(() -> observer.watchers() == 0);
        assertThat(observer.watchers()).as("watches of closed connections").isZero();
    }

    /** Reads the response head (status line and headers). */
    private static String head(InputStream in) throws Exception {
        StringBuilder sb = new StringBuilder();
        while (!sb.toString().endsWith("\r\n\r\n")) {
            int c = in.read();
            if (c < 0) {
                break;
            }
            sb.append((char) c);
        }
        return sb.toString();
    }
}

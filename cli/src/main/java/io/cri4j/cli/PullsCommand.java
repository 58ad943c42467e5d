package io.cri4j.cli;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonSyntaxException;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.imagepull.LayerProgress;
import io.cri4j.imagepull.PullProgress;
import io.cri4j.imagepull.PullProgressJson;
import io.cri4j.imagepull.PullProgressService;
import io.cri4j.imagepull.v1.ImagePullProgress;
import io.cri4j.imagepull.v1.PullProgressGrpc;
import io.cri4j.imagepull.v1.WatchRequest;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code cri4j pulls}: the image pulls passing through a cri4j proxy right now (kubelet's, crictl's, anyone's),
 * with a live bar per pull and per layer, as {@code cri4j pull} shows its own; or, with {@code --json}, the
 * stream of KEP-5334 progress objects. Reads the proxy's progress endpoint ({@code http://HOST:PORT}, its
 * {@code --progress-address}) or its socket ({@code unix:///PATH}, {@code cri4j.imagepull.v1.PullProgress/Watch}).
 * With {@code --image} it follows that image's pull and exits when it ends (1 when it failed); without, it
 * runs until interrupted.
 */
@Command(
        name = "pulls",
        mixinStandardHelpOptions = true,
        description =
                "Watch the image pulls passing through a cri4j proxy, with live progress bars (or --json).")
final class PullsCommand implements Callable<Integer> {

    private static final int MAX_SHOWN = 50;

    @Spec CommandSpec spec;

    @Option(
            names = "--proxy-endpoint",
            required = true,
            description =
                    "the proxy's progress address (http://127.0.0.1:PORT) or its socket (unix:///PATH)")
    String proxyEndpoint;

    @Option(names = "--image", description = "follow this image's pull only, and exit when it ends")
    String image;

    @Option(
            names = "--json",
            description = "print the progress objects (newline-delimited JSON) instead of bars")
    boolean json;

    @Option(
            names = "--progress",
            defaultValue = "auto",
            description =
                    "auto, tty (redrawn bars) or plain (a line per change) (default: ${DEFAULT-VALUE})")
    String progressMode;

    /** The latest snapshot of each pull seen, in the order first seen (the oldest finished ones dropped). */
    private final Map<String, PullProgress> pulls = new LinkedHashMap<>();

    private PrintWriter out;
    private PullProgressJson.Lines lines;

    @Override
    public Integer call() throws Exception {
        out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        boolean tty = PullProgressRenderer.redrawn(progressMode, spec);
        String target = image == null ? "" : image.strip();
        boolean http = proxyEndpoint.startsWith("http://") || proxyEndpoint.startsWith("https://");
        CriEndpoint socket = null;
        if (!http) {
            try {
                socket = CriEndpoint.parse(proxyEndpoint);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(
                        spec.commandLine(),
                        "--proxy-endpoint must be http://HOST:PORT"
                                + " or unix:///PATH, not '"
                                + proxyEndpoint
                                + "'");
            }
        }
        PullProgressRenderer renderer = new PullProgressRenderer(out, tty, this::snapshots);
        lines = new PullProgressJson.Lines();
        ScheduledExecutorService ticks =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "cri4j-pulls-render");
                            t.setDaemon(true);
                            return t;
                        });
        if (!json) {
            ticks.scheduleWithFixedDelay(
                    () -> {
                        synchronized (this) {
                            renderer.render(false);
                        }
                    },
                    200,
                    200,
                    TimeUnit.MILLISECONDS);
        }
        String failure;
        try {
            failure = http ? followHttp(target) : followSocket(socket, target);
        } finally {
            ticks.shutdownNow();
            ticks.awaitTermination(5, TimeUnit.SECONDS);
        }
        synchronized (this) {
            if (!json) {
                renderer.render(true);
            }
            out.flush();
        }
        if (failure != null) {
            err.println("cri4j pulls: " + failure);
            err.flush();
            return 1;
        }
        if (target.isEmpty()) {
            return 0;
        }
        PullProgress last;
        synchronized (this) {
            last = pulls.values().stream().reduce((a, b) -> b).orElse(null);
        }
        if (last == null) {
            err.println("cri4j pulls: the stream of " + target + " ended without a pull");
            err.flush();
            return 1;
        }
        if (last.phase() != PullProgress.Phase.SUCCEEDED) {
            err.println("cri4j pulls: pulling " + last.image() + " failed: " + last.message());
            err.flush();
            return 1;
        }
        return 0;
    }

    private synchronized List<PullProgress> snapshots() {
        return new ArrayList<>(pulls.values());
    }

    /** A new snapshot of a pull: kept, and with {@code print} printed at once as progress objects. */
    private synchronized void seen(PullProgress p, boolean print) {
        pulls.remove(p.image());
        pulls.put(p.image(), p);
        while (pulls.size() > MAX_SHOWN) {
            Iterator<PullProgress> it = pulls.values().iterator();
            PullProgress oldest = it.next();
            if (!oldest.phase().terminal()) {
                break;
            }
            it.remove();
        }
        if (print) {
            out.print(lines.lines(p));
            out.flush();
        }
    }

    /** {@code GET /imagePullProgress?...}; returns why it failed, or null. */
    private String followHttp(String target) throws InterruptedException {
        URI base = URI.create(proxyEndpoint.endsWith("/") ? proxyEndpoint : proxyEndpoint + "/");
        URI uri =
                base.resolve(
                        "imagePullProgress?"
                                + (target.isEmpty()
                                        ? "follow=true"
                                        : "image="
                                                + URLEncoder.encode(
                                                        target, StandardCharsets.UTF_8)));
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        HttpResponse<Stream<String>> r;
        try {
            r =
                    client.send(
                            HttpRequest.newBuilder(uri).build(),
                            HttpResponse.BodyHandlers.ofLines());
        } catch (IOException e) {
            return "cannot read "
                    + uri
                    + ": "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
        }
        Map<String, Map<String, LayerProgress>> layers = new LinkedHashMap<>();
        try (Stream<String> body = r.body()) {
            if (r.statusCode() != 200) {
                return uri
                        + " answered "
                        + r.statusCode()
                        + ": "
                        + String.join(" ", body.toList()).strip();
            }
            Iterator<String> it = body.iterator();
            while (it.hasNext()) {
                String line = it.next();
                if (json) {
                    synchronized (this) {
                        out.println(line); // as the proxy sent it
                        out.flush();
                    }
                }
                PullProgress p = parse(line, layers);
                if (p != null) {
                    seen(p, false); // with --json printed above, as it came
                }
            }
        } catch (java.io.UncheckedIOException e) {
            return "the stream from " + uri + " broke: " + e.getCause().getMessage();
        }
        return target.isEmpty() ? "the proxy at " + base + " ended the stream" : null;
    }

    /** A KEP-5334 object: a layer's goes into the pull's layers, an image's makes a snapshot. */
    private static PullProgress parse(String line, Map<String, Map<String, LayerProgress>> layers) {
        JsonObject o;
        try {
            o = JsonParser.parseString(line).getAsJsonObject();
        } catch (JsonSyntaxException | IllegalStateException e) {
            return null;
        }
        String image = str(o, "image");
        if (o.has("layer")) {
            layers.computeIfAbsent(image, k -> new LinkedHashMap<>())
                    .put(
                            str(o, "layer"),
                            new LayerProgress(
                                    str(o, "layer"),
                                    str(o, "status"),
                                    o.get("progress").getAsLong(),
                                    o.get("total").getAsLong()));
            return null;
        }
        PullProgress.Phase phase =
                switch (str(o, "phase")) {
                    case "succeeded" -> PullProgress.Phase.SUCCEEDED;
                    case "failed" -> PullProgress.Phase.FAILED;
                    default -> PullProgress.Phase.PULLING;
                };
        List<LayerProgress> ls = new ArrayList<>(layers.getOrDefault(image, Map.of()).values());
        if (phase.terminal()) {
            layers.remove(image);
        }
        return new PullProgress(
                image,
                phase,
                1,
                o.has("percent") ? o.get("percent").getAsInt() : -1,
                o.get("progress").getAsLong(),
                Math.max(0, o.get("total").getAsLong()),
                0,
                ls,
                phase == PullProgress.Phase.FAILED ? str(o, "error") : str(o, "message"),
                Instant.now());
    }

    private static String str(JsonObject o, String k) {
        return o.has(k) && !o.get(k).isJsonNull() ? o.get(k).getAsString() : "";
    }

    /** {@code cri4j.imagepull.v1.PullProgress/Watch} on the proxy's socket; returns why it failed, or null. */
    private String followSocket(CriEndpoint socket, String target) throws InterruptedException {
        ManagedChannel channel = CriChannels.newChannel(socket);
        CompletableFuture<Void> done = new CompletableFuture<>();
        try {
            PullProgressGrpc.newStub(channel)
                    .watch(
                            WatchRequest.newBuilder().setImage(target).build(),
                            new StreamObserver<>() {
                                @Override
                                public void onNext(ImagePullProgress value) {
                                    seen(PullProgressService.fromMessage(value), json);
                                }

                                @Override
                                public void onError(Throwable t) {
                                    done.completeExceptionally(t);
                                }

                                @Override
                                public void onCompleted() {
                                    done.complete(null);
                                }
                            });
            try {
                done.get();
            } catch (java.util.concurrent.ExecutionException e) {
                Status s = Status.fromThrowable(e.getCause());
                if (s.getCode() == Status.Code.UNIMPLEMENTED) {
                    return socket
                            + " does not serve image pull progress (a cri4j proxy observing pulls does)";
                }
                return "watching pulls on "
                        + socket
                        + " failed: "
                        + s.getCode()
                        + (s.getDescription() == null ? "" : ": " + s.getDescription());
            }
            return target.isEmpty() ? "the proxy at " + socket + " ended the stream" : null;
        } finally {
            channel.shutdownNow();
            channel.awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}

package io.cri4j.cli;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.imagepull.CredentialStore;
import io.cri4j.imagepull.CriImagePullBackend;
import io.cri4j.imagepull.DockerImagePullBackend;
import io.cri4j.imagepull.ImagePullBackend;
import io.cri4j.imagepull.ImagePuller;
import io.cri4j.imagepull.PullJob;
import io.cri4j.imagepull.PullPolicy;
import io.cri4j.imagepull.PullRequest;
import io.cri4j.imagepull.PullResult;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code cri4j pull}: pulls images through a CRI runtime (or the Docker Engine API) with retries,
 * a live progress bar per image (and per layer where the runtime reveals layers), and one clear
 * error line per image that failed. Exit code 0 when every image is present, 1 otherwise.
 */
@Command(
        name = "pull",
        mixinStandardHelpOptions = true,
        description = "Pull images with retries and live progress (per layer where known).")
final class PullCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Option(
            names = {"-r", "--runtime-endpoint"},
            converter = EndpointConverter.class,
            defaultValue = EndpointConverter.DEFAULT_RUNTIME_ENDPOINT,
            description =
                    "CRI endpoint: unix:///path, /path or tcp://host:port (default: ${DEFAULT-VALUE})")
    CriEndpoint endpoint;

    @Option(
            names = "--docker-socket",
            description = "pull through the Docker Engine API on this socket instead of CRI")
    Path dockerSocket;

    @Option(
            names = "--timeout",
            converter = DurationConverter.class,
            defaultValue = "10m",
            description =
                    "time allowed per attempt, e.g. 90s, 10m; at most 24h (default: ${DEFAULT-VALUE})")
    Duration timeout;

    @Option(
            names = "--backoff-limit",
            defaultValue = "3",
            description =
                    "retries after a failed attempt; back-off 1s doubling to 30s (default: ${DEFAULT-VALUE})")
    int backoffLimit;

    @Option(
            names = "--deadline",
            converter = DurationConverter.class,
            description = "time allowed for each image across all attempts; at most 24h")
    Duration deadline;

    @Option(
            names = "--workers",
            defaultValue = "4",
            description = "images pulled at once (default: ${DEFAULT-VALUE})")
    int workers;

    @Option(names = "--force", description = "pull even when the runtime already has the image")
    boolean force;

    @Option(
            names = "--docker-config",
            description =
                    "Docker config.json with registry credentials"
                            + " (default: $DOCKER_CONFIG/config.json or ~/.docker/config.json when present)")
    Path dockerConfig;

    @Option(
            names = "--progress",
            defaultValue = "auto",
            description =
                    "auto, tty (redrawn bars) or plain (a line per change) (default: ${DEFAULT-VALUE})")
    String progressMode;

    @Parameters(arity = "1..*", paramLabel = "IMAGE", description = "image references")
    List<String> images;

    private Path defaultDockerConfig() {
        String env = System.getenv("DOCKER_CONFIG");
        Path p =
                env != null
                        ? Path.of(env, "config.json")
                        : Path.of(System.getProperty("user.home"), ".docker", "config.json");
        return Files.isRegularFile(p) ? p : null;
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (backoffLimit < 0) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--backoff-limit must be >= 0");
        }
        if (workers < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--workers must be >= 1");
        }
        boolean tty = PullProgressRenderer.redrawn(progressMode, spec);
        CredentialStore creds = CredentialStore.empty();
        Path cfg = dockerConfig != null ? dockerConfig : defaultDockerConfig();
        if (cfg != null) {
            try {
                creds = CredentialStore.fromDockerConfig(cfg);
            } catch (java.io.IOException | IllegalArgumentException e) {
                err.println("cri4j pull: cannot read credentials: " + e.getMessage());
                err.flush();
                return 2;
            }
        }
        PullPolicy policy =
                PullPolicy.defaults().withAttemptTimeout(timeout).withBackoffLimit(backoffLimit);
        if (deadline != null) {
            policy = policy.withActiveDeadline(deadline);
        }
        ImagePullBackend backend =
                dockerSocket != null
                        ? DockerImagePullBackend.create(dockerSocket)
                        : CriImagePullBackend.builder(endpoint).build();
        List<PullJob> jobs = new ArrayList<>();
        try (ImagePuller puller =
                ImagePuller.builder(backend)
                        .workers(workers)
                        .defaultPolicy(policy)
                        .credentials(creds)
                        .build()) {
            for (String image : images) {
                PullRequest req;
                try {
                    req = PullRequest.of(image).withForce(force);
                } catch (IllegalArgumentException e) {
                    throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
                }
                jobs.add(puller.pull(req));
            }
            PullProgressRenderer renderer = new PullProgressRenderer(out, tty, jobs);
            CompletableFuture<Void> all =
                    CompletableFuture.allOf(
                            jobs.stream()
                                    .map(j -> j.result().handle((r, e) -> null))
                                    .toArray(CompletableFuture[]::new));
            while (true) {
                try {
                    all.get(200, TimeUnit.MILLISECONDS);
                    break;
                } catch (TimeoutException e) {
                    renderer.render(false);
                }
            }
            renderer.render(true);
        }
        int failed = 0;
        for (PullJob job : jobs) {
            try {
                PullResult r = job.result().get();
                out.printf(
                        "%s: %s %s%s in %s%n",
                        r.image(),
                        r.alreadyPresent() ? "present" : "pulled",
                        r.imageId(),
                        r.digest().isEmpty() ? "" : " (" + r.digest() + ")",
                        seconds(r.elapsed()));
            } catch (ExecutionException | CancellationException e) {
                failed++;
                Throwable cause =
                        e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
                err.println("cri4j pull: " + cause.getMessage());
            }
        }
        out.flush();
        err.flush();
        return failed == 0 ? 0 : 1;
    }

    private static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.1fs", d.toMillis() / 1000.0);
    }
}

package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.imagepull.PullObserver;
import io.cri4j.imagepull.PullProgress;
import io.cri4j.imagepull.PullProgressServer;
import io.cri4j.testing.fake.FakeCriServer;
import io.cri4j.testing.real.internal.Commands;
import io.cri4j.testing.real.internal.Requirements;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The progress page in a real browser: Debian's Chromium, headless, loads the page the proxy's progress
 * endpoint serves while pulls go through the proxy to the fake runtime (which pulls with byte progress),
 * runs its JavaScript, and shows a bar at 100% for the finished pull. A screenshot is kept in
 * {@code target/pull-progress-page.png}.
 */
class PullProgressPageIT {

    private static final String DONE = "registry.example/web/frontend:1.0";
    private static final String MOVING = "registry.example/web/backend:2.1";

    @TempDir Path dir;

    /** Runs headless Chromium as the brief of these machines has it: no sandbox, no network of its own. */
    private List<String> chromium(Path browser, String... args) throws Exception {
        Path profile = Files.createDirectories(dir.resolve("profile-" + System.nanoTime()));
        List<String> cmd =
                new ArrayList<>(
                        List.of(
                                browser.toString(),
                                "--headless",
                                "--no-sandbox",
                                "--disable-gpu",
                                "--disable-quic",
                                "--no-first-run",
                                "--disable-background-networking",
                                "--disable-component-update",
                                "--disable-sync",
                                "--user-data-dir=" + profile,
                                "--virtual-time-budget=4000",
                                "--window-size=1100,640"));
        cmd.addAll(List.of(args));
        return cmd;
    }

    @Test
    void chromiumShowsAFinishedPullAt100PercentAndKeepsAScreenshot() throws Exception {
        Path browser = Requirements.require("chromium", "chromium");
        try (FakeCriServer fake =
                        FakeCriServer.builder()
                                .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                                .pullRate(16L << 20)
                                .build()
                                .start();
                PullObserver observer =
                        PullObserver.builder(fake.endpoint())
                                .pollInterval(Duration.ofMillis(50))
                                .build();
                CriProxy proxy =
                        CriProxy.builder()
                                .listen(dir.resolve("proxy.sock"))
                                .backend(fake.endpoint())
                                .observePulls(observer)
                                .build()
                                .start();
                PullProgressServer server = PullProgressServer.builder(observer).build().start()) {
            ManagedChannel channel = CriChannels.newChannel(proxy.listenEndpoint());
            try {
                var images =
                        ImageServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(60, TimeUnit.SECONDS);
                images.pullImage(
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(DONE))
                                .build());
                PullProgressContainerdTests.awaitTrue(
                        () -> observer.pull(DONE).map(p -> p.phase().terminal()).orElse(false));
                PullProgress done = observer.pull(DONE).orElseThrow();
                assertThat(done.percent()).isEqualTo(100);
                // a second pull still moving while the browser looks (for the screenshot; it may
                // finish first)
                CompletableFuture<?> moving =
                        CompletableFuture.runAsync(
                                () ->
                                        ImageServiceGrpc.newBlockingStub(channel)
                                                .withDeadlineAfter(60, TimeUnit.SECONDS)
                                                .pullImage(
                                                        PullImageRequest.newBuilder()
                                                                .setImage(
                                                                        ImageSpec.newBuilder()
                                                                                .setImage(MOVING))
                                                                .build()));
                PullProgressContainerdTests.awaitTrue(
                        () ->
                                moving.isDone()
                                        || observer.pull(MOVING)
                                                .map(p -> p.bytesDone() > 0)
                                                .orElse(false));

                String url = server.baseUrl().toString();
                Path shot = Path.of("target", "pull-progress-page.png").toAbsolutePath();
                Files.deleteIfExists(shot);
                Commands.Result r =
                        Commands.exec(
                                Duration.ofSeconds(60),
                                dir,
                                Map.of(),
                                chromium(browser, "--screenshot=" + shot, url));
                assertThat(r.exitCode()).as(r.output()).isZero();
                byte[] png = Files.readAllBytes(shot);
                assertThat(png.length).isGreaterThan(1000);
                assertThat(new String(png, 1, 3, java.nio.charset.StandardCharsets.US_ASCII))
                        .isEqualTo("PNG");
                Commands.Result dom =
                        Commands.exec(
                                Duration.ofSeconds(60),
                                dir,
                                Map.of(),
                                chromium(browser, "--dump-dom", url));
                assertThat(dom.exitCode()).as(dom.output()).isZero();
                Matcher m =
                        Pattern.compile(
                                        "<div class=\"pull succeeded\" data-image=\""
                                                + Pattern.quote(DONE)
                                                + "\" data-phase=\"succeeded\" data-percent=\"(\\d+)\">.*?<div class=\"fill\" style=\"width: (\\d+)%;\">",
                                        Pattern.DOTALL)
                                .matcher(dom.output());
                assertThat(m.find())
                        .as("the finished pull's bar in the page's DOM:\n%s", dom.output())
                        .isTrue();
                assertThat(m.group(1)).isEqualTo("100");
                assertThat(m.group(2)).isEqualTo("100");
                assertThat(dom.output())
                        .contains(
                                "100%  " + mib(done.bytesDone()) + " / " + mib(done.bytesTotal()));

                moving.get(60, TimeUnit.SECONDS);
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    /** As the page writes byte counts. */
    private static String mib(long bytes) {
        return String.format(java.util.Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }
}

package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.grpc.ManagedChannel;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CLI's servers at DEBUG, as an operator turns it on to look into a problem: exec URLs carry
 * a one-time token that grants a shell in the container, and no log line may show it (gRPC's
 * HTTP/2 frame logger dumps every DATA frame at DEBUG).
 */
class DebugLogsIT {

    @TempDir Path dir;

    /** A CLI process at DEBUG whose every output line is kept. */
    static final class Logged implements AutoCloseable {
        final Process process;
        final List<String> lines = new ArrayList<>();
        final LinkedBlockingQueue<String> fresh = new LinkedBlockingQueue<>();
        final Thread drain;

        Logged(String... args) throws Exception {
            List<String> cmd =
                    new ArrayList<>(
                            List.of(
                                    Path.of(System.getProperty("java.home"), "bin", "java")
                                            .toString(),
                                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=debug",
                                    "-jar",
                                    Path.of("target", "cri4j-cli.jar")
                                            .toAbsolutePath()
                                            .toString()));
            cmd.addAll(List.of(args));
            process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            drain =
                    new Thread(
                            () -> {
                                try (BufferedReader r =
                                        new BufferedReader(
                                                new InputStreamReader(
                                                        process.getInputStream(),
                                                        StandardCharsets.UTF_8))) {
                                    for (String l; (l = r.readLine()) != null; ) {
                                        synchronized (lines) {
                                            lines.add(l);
                                        }
                                        fresh.add(l);
                                    }
                                } catch (Exception ignored) {
                                    // the process is gone
                                }
                            });
            drain.setDaemon(true);
            drain.start();
        }

        /** Waits (at most 60 s) for a line containing {@code text}. */
        String await(String text) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < end) {
                String l = fresh.poll(1, TimeUnit.SECONDS);
                if (l != null && l.contains(text)) {
                    return l;
                }
            }
            throw new AssertionError("no line with '" + text + "' within 60 s");
        }

        /** Everything printed, once the process has exited. */
        String all() {
            synchronized (lines) {
                return String.join("\n", lines);
            }
        }

        @Override
        public void close() throws Exception {
            process.destroy();
            assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
            drain.join(10_000);
        }
    }

    @Test
    void execTokensAppearInNoDebugLog() throws Exception {
        Path fakeSock = dir.resolve("fake.sock");
        Path proxySock = dir.resolve("proxy.sock");
        List<String> tokens = new ArrayList<>();
        Logged fake =
                new Logged(
                        "fake-runtime",
                        "--listen",
                        "unix://" + fakeSock,
                        "--streaming-address",
                        "127.0.0.1:0");
        Logged proxy;
        try (fake) {
            fake.await("serving runtime.v1");
            proxy =
                    new Logged(
                            "proxy",
                            "--listen",
                            "unix://" + proxySock,
                            "--backend",
                            "unix://" + fakeSock);
            try (proxy) {
                proxy.await("cri4j proxy: serving");
                ManagedChannel ch = CriChannels.newChannel(CriEndpoint.unix(proxySock));
                try {
                    var rt =
                            RuntimeServiceGrpc.newBlockingStub(ch)
                                    .withDeadlineAfter(20, TimeUnit.SECONDS);
                    io.cri4j.cri.v1.ImageServiceGrpc.newBlockingStub(ch)
                            .withDeadlineAfter(20, TimeUnit.SECONDS)
                            .pullImage(
                                    io.cri4j.cri.v1.PullImageRequest.newBuilder()
                                            .setImage(ImageSpec.newBuilder().setImage("busybox"))
                                            .build());
                    PodSandboxConfig pod =
                            PodSandboxConfig.newBuilder()
                                    .setMetadata(
                                            PodSandboxMetadata.newBuilder()
                                                    .setName("p")
                                                    .setNamespace("ns")
                                                    .setUid("u"))
                                    .build();
                    String sandbox =
                            rt.runPodSandbox(
                                            RunPodSandboxRequest.newBuilder()
                                                    .setConfig(pod)
                                                    .build())
                                    .getPodSandboxId();
                    String container =
                            rt.createContainer(
                                            CreateContainerRequest.newBuilder()
                                                    .setPodSandboxId(sandbox)
                                                    .setSandboxConfig(pod)
                                                    .setConfig(
                                                            ContainerConfig.newBuilder()
                                                                    .setMetadata(
                                                                            ContainerMetadata
                                                                                    .newBuilder()
                                                                                    .setName("c"))
                                                                    .setImage(
                                                                            ImageSpec.newBuilder()
                                                                                    .setImage(
                                                                                            "busybox")))
                                                    .build())
                                    .getContainerId();
                    rt.startContainer(
                            StartContainerRequest.newBuilder().setContainerId(container).build());
                    for (int i = 0; i < 3; i++) {
                        String url =
                                rt.exec(
                                                ExecRequest.newBuilder()
                                                        .setContainerId(container)
                                                        .addCmd("date")
                                                        .setStdout(true)
                                                        .build())
                                        .getUrl();
                        String path = URI.create(url).getPath();
                        tokens.add(path.substring(path.lastIndexOf('/') + 1));
                    }
                } finally {
                    ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                }
            }
        }
        assertThat(tokens).allMatch(t -> t.length() >= 8);
        assertThat(fake.all()).as("the fake logged at DEBUG").contains("DEBUG");
        for (String t : tokens) {
            // as text, and as the hex dumps of a frame logger (which may cut a payload short)
            String head = t.substring(0, 8);
            String hex =
                    java.util.HexFormat.of().formatHex(head.getBytes(StandardCharsets.US_ASCII));
            for (Logged l : List.of(fake, proxy)) {
                assertThat(l.all())
                        .as("log of %s", l == fake ? "fake-runtime" : "proxy")
                        .doesNotContain(head)
                        .doesNotContainIgnoringCase(hex);
            }
        }
    }
}

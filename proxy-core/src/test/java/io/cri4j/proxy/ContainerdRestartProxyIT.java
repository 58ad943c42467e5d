package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.testing.real.ContainerdExtension;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proxy in front of a REAL containerd (the cri-testing harness) that is killed with SIGKILL
 * and started again on the same socket: calls during the outage fail fast with UNAVAILABLE, and
 * the same proxy serves again afterwards. Its own class: the harness's containerd is gone after.
 */
class ContainerdRestartProxyIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @TempDir Path dir;
    private CriProxy proxy;
    private ManagedChannel channel;
    private RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime;

    @BeforeEach
    void startProxy() throws Exception {
        proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(CONTAINERD.endpoint())
                        .build()
                        .start();
        channel = CriChannels.newChannel(proxy.listenEndpoint());
        runtime = RuntimeServiceGrpc.newBlockingStub(channel);
    }

    @AfterEach
    void stopProxy() {
        if (channel != null) {
            channel.shutdownNow();
        }
        if (proxy != null) {
            proxy.close();
        }
    }

    private RuntimeServiceGrpc.RuntimeServiceBlockingStub rt() {
        return runtime.withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    @Test
    void containerdKilledAndRestartedWhileCallsRun() throws Exception {
        assertThat(rt().version(VersionRequest.getDefaultInstance()).getRuntimeName())
                .isEqualTo("containerd");
        Path config = CONTAINERD.containerd().directory().resolve("config.toml");
        long pid = CONTAINERD.containerd().pid();
        // a caller keeps calling through the proxy across the kill and the restart
        java.util.concurrent.ConcurrentLinkedQueue<Status.Code> background =
                new java.util.concurrent.ConcurrentLinkedQueue<>();
        java.util.concurrent.ConcurrentLinkedQueue<String> startingUp =
                new java.util.concurrent.ConcurrentLinkedQueue<>();
        java.util.concurrent.ConcurrentLinkedQueue<String> unexpected =
                new java.util.concurrent.ConcurrentLinkedQueue<>();
        java.util.concurrent.atomic.AtomicBoolean stop =
                new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicLong slowest =
                new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicReference<java.util.concurrent.CountDownLatch> okSignal =
                new java.util.concurrent.atomic.AtomicReference<>(
                        new java.util.concurrent.CountDownLatch(0));
        Thread caller =
                new Thread(
                        () -> {
                            while (!stop.get()) {
                                long t0 = System.nanoTime();
                                try {
                                    runtime.withDeadlineAfter(5, TimeUnit.SECONDS)
                                            .listContainers(
                                                    io.cri4j.cri.v1.ListContainersRequest
                                                            .getDefaultInstance());
                                    background.add(Status.Code.OK);
                                    okSignal.get().countDown();
                                } catch (StatusRuntimeException e) {
                                    Status.Code code = e.getStatus().getCode();
                                    String description =
                                            String.valueOf(e.getStatus().getDescription());
                                    if (code == Status.Code.UNKNOWN
                                            && description.contains("not initialized")) {
                                        // containerd itself, restarted, answers before its CRI
                                        // plugin is ready; the proxy
                                        // passes that answer through unchanged, as it must
                                        startingUp.add(description);
                                    } else {
                                        background.add(code);
                                        if (code != Status.Code.UNAVAILABLE) {
                                            unexpected.add(e.getStatus().toString());
                                        }
                                    }
                                    slowest.accumulateAndGet(System.nanoTime() - t0, Math::max);
                                }
                            }
                        },
                        "background-caller");
        caller.start();
        Process kill = new ProcessBuilder("kill", "-9", Long.toString(pid)).start();
        assertThat(kill.waitFor()).isZero();
        // calls during the outage fail fast with UNAVAILABLE
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        StatusRuntimeException outage = null;
        while (outage == null && System.nanoTime() < deadline) {
            long t0 = System.nanoTime();
            try {
                runtime.withDeadlineAfter(5, TimeUnit.SECONDS)
                        .version(VersionRequest.getDefaultInstance());
            } catch (StatusRuntimeException e) {
                outage = e;
                assertThat(Duration.ofNanos(System.nanoTime() - t0))
                        .isLessThan(Duration.ofSeconds(2));
            }
        }
        assertThat(outage).isNotNull();
        assertThat(outage.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);

        Process restarted =
                new ProcessBuilder("containerd", "--config", config.toString())
                        .redirectErrorStream(true)
                        .redirectOutput(dir.resolve("containerd-restarted.log").toFile())
                        .start();
        try {
            List<Status.Code> seen = new ArrayList<>();
            String name = null;
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (name == null && System.nanoTime() < deadline) {
                try {
                    name =
                            runtime.withWaitForReady()
                                    .withDeadlineAfter(2, TimeUnit.SECONDS)
                                    .version(VersionRequest.getDefaultInstance())
                                    .getRuntimeName();
                } catch (StatusRuntimeException e) {
                    seen.add(e.getStatus().getCode());
                }
            }
            assertThat(name)
                    .as("proxy serves again after restart; errors meanwhile: %s", seen)
                    .isEqualTo("containerd");
            assertThat(rt().listPodSandbox(ListPodSandboxRequest.getDefaultInstance())).isNotNull();
            // the background caller saw successes, fast UNAVAILABLE failures, and successes again
            java.util.concurrent.CountDownLatch threeMore =
                    new java.util.concurrent.CountDownLatch(3);
            okSignal.set(threeMore);
            long okBefore = background.stream().filter(c -> c == Status.Code.OK).count();
            assertThat(threeMore.await(10, TimeUnit.SECONDS))
                    .as("the background caller succeeds again after the restart")
                    .isTrue();
            stop.set(true);
            caller.join(10_000);
            assertThat(unexpected).as("statuses other than OK and UNAVAILABLE").isEmpty();
            assertThat(new java.util.HashSet<>(background))
                    .as(
                            "a call during the outage fails with UNAVAILABLE, never hangs or fails otherwise")
                    .containsExactlyInAnyOrder(Status.Code.OK, Status.Code.UNAVAILABLE);
            assertThat(Duration.ofNanos(slowest.get())).isLessThan(Duration.ofSeconds(2));
            assertThat(background.stream().filter(c -> c == Status.Code.OK).count())
                    .isGreaterThan(okBefore);
        } finally {
            stop.set(true);
            caller.join(10_000);
            restarted.destroy();
            if (!restarted.waitFor(15, TimeUnit.SECONDS)) {
                restarted.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
        assertThatThrownBy(
                        () ->
                                runtime.withDeadlineAfter(5, TimeUnit.SECONDS)
                                        .version(VersionRequest.getDefaultInstance()))
                .isInstanceOf(StatusRuntimeException.class);
    }
}

package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.nri.NriPlugin;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.NriGoPlugin;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cri4j proxy --nri-socket} as a real process in front of containerd 1.6 (which has no
 * NRI): NRI's own Go plugins ({@code nri-logger} with {@code -add-env} and {@code
 * -add-annotation}, {@code nri-device-injector}) connect to the proxy's NRI socket and change the
 * containers containerd runs, seen inside them; a plugin that disconnects while the proxy waits
 * for its answer fails that call, naming it; after a restart of the proxy with containers
 * running, a plugin that connects gets them in {@code Synchronize}.
 */
class ProxyNriSocketIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @TempDir Path dir;

    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final List<String> pods = new ArrayList<>();
    private CliProcess proxy;
    private ManagedChannel channel;
    private String image;

    @AfterEach
    void cleanUp() throws Exception {
        ManagedChannel direct = CriChannels.newChannel(CONTAINERD.endpoint());
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub d =
                    RuntimeServiceGrpc.newBlockingStub(direct);
            for (String p : pods) {
                try {
                    d.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .stopPodSandbox(
                                    StopPodSandboxRequest.newBuilder().setPodSandboxId(p).build());
                    d.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .removePodSandbox(
                                    RemovePodSandboxRequest.newBuilder()
                                            .setPodSandboxId(p)
                                            .build());
                } catch (StatusRuntimeException e) {
                    // the test's failure is the one to see
                }
            }
        } finally {
            direct.shutdownNow();
        }
        if (channel != null) {
            channel.shutdownNow();
        }
        for (AutoCloseable c : toClose) {
            c.close();
        }
        if (proxy != null) {
            proxy.close();
        }
    }

    /** Starts {@code ./cri4j proxy --nri-socket} and waits until it serves. */
    private void startProxy(String... extra) throws Exception {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "proxy",
                                "--listen",
                                "unix://" + dir.resolve("proxy.sock"),
                                "--backend",
                                CONTAINERD.endpoint().toString(),
                                "--no-observe-pulls",
                                "--nri-socket",
                                "unix://" + dir.resolve("nri.sock")));
        args.addAll(List.of(extra));
        proxy = CliProcess.start(args.toArray(String[]::new));
        awaitLine("cri4j proxy: NRI plugins connect to unix://" + dir.resolve("nri.sock"));
        if (channel != null) {
            channel.shutdownNow();
        }
        channel = CriChannels.newChannel(CriEndpoint.unix(dir.resolve("proxy.sock")));
    }

    /** Reads the proxy's output until a line containing each of {@code texts} went by, in any order. */
    private void awaitLine(String... texts) throws Exception {
        List<String> missing = new ArrayList<>(List.of(texts));
        StringBuilder seen = new StringBuilder();
        while (!missing.isEmpty()) {
            String line = proxy.nextLine();
            assertThat(line).as("proxy output before %s:%n%s", missing, seen).isNotNull();
            seen.append(line).append('\n');
            missing.removeIf(line::contains);
        }
    }

    private RuntimeServiceGrpc.RuntimeServiceBlockingStub rt() {
        return RuntimeServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private String image() {
        if (image == null) {
            image = CONTAINERD.registry().push(TestImage.busybox()).reference();
            ImageServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
        }
        return image;
    }

    private PodSandboxConfig pod(String name, String... annotations) {
        PodSandboxConfig.Builder b = TestPods.hostNetwork(name, "nri", dir);
        for (int i = 0; i < annotations.length; i += 2) {
            b.putAnnotations(annotations[i], annotations[i + 1]);
        }
        return b.build();
    }

    private String runPod(PodSandboxConfig config) {
        String id =
                rt().runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(config).build())
                        .getPodSandboxId();
        pods.add(id);
        return id;
    }

    private CreateContainerRequest container(String podId, PodSandboxConfig pod, String name) {
        return CreateContainerRequest.newBuilder()
                .setPodSandboxId(podId)
                .setSandboxConfig(pod)
                .setConfig(
                        ContainerConfig.newBuilder()
                                .setMetadata(ContainerMetadata.newBuilder().setName(name))
                                .setImage(ImageSpec.newBuilder().setImage(image()))
                                .addCommand("sleep")
                                .addArgs("3600")
                                .setLogPath(name + ".log"))
                .build();
    }

    private String exec(String ctr, String... cmd) {
        var r =
                rt().execSync(
                                ExecSyncRequest.newBuilder()
                                        .setContainerId(ctr)
                                        .addAllCmd(List.of(cmd))
                                        .setTimeout(10)
                                        .build());
        assertThat(r.getExitCode())
                .as(String.join(" ", cmd) + ": " + r.getStderr().toStringUtf8())
                .isZero();
        return r.getStdout().toStringUtf8();
    }

    private NriGoPlugin go(String binary, int index, String... args) {
        NriGoPlugin p = NriGoPlugin.launch(dir.resolve("nri.sock"), dir, binary, index, args);
        toClose.add(0, p);
        return p;
    }

    @Test
    void nrisGoPluginsChangeContainersOfContainerd16AndAreSynchronizedAfterARestart()
            throws Exception {
        startProxy();
        NriGoPlugin logger =
                go("nri-logger", 20, "-add-env", "FROM_GO", "-add-annotation", "go.nri.io/seen");
        go("nri-device-injector", 10);
        awaitLine(
                "NRI plugin 10-nri-device-injector registered",
                "NRI plugin 20-nri-logger registered");

        PodSandboxConfig pod =
                pod(
                        "go-plugins",
                        "devices.nri.io/container.app",
                        "- path: /dev/cri4j-null\n  type: c\n  major: 1\n  minor: 3\n");
        String podId = runPod(pod);
        String ctr = rt().createContainer(container(podId, pod, "app")).getContainerId();
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        // nri-logger sets what it adds to "logger-pid-<its pid>"
        String value = "logger-pid-" + logger.pid();
        assertThat(exec(ctr, "env").lines()).contains("FROM_GO=" + value);
        assertThat(exec(ctr, "stat", "-c", "%F %t:%T", "/dev/cri4j-null"))
                .isEqualTo("character special file 1:3\n");
        assertThat(
                        rt().containerStatus(
                                        ContainerStatusRequest.newBuilder()
                                                .setContainerId(ctr)
                                                .build())
                                .getStatus()
                                .getAnnotationsMap())
                .containsEntry("go.nri.io/seen", value);
        assertThat(Files.readString(logger.logFile())).contains("StartContainer").contains(ctr);

        // the proxy restarts with the container running: a plugin connecting now gets it in
        // Synchronize
        CliRun stopped = proxy.terminate();
        assertThat(stopped.out()).doesNotContain("Exception");
        proxy = null;
        startProxy();
        NriGoPlugin late = go("nri-logger", 30);
        awaitLine("NRI plugin 30-nri-logger registered");
        String log = Files.readString(late.logFile());
        assertThat(log)
                .contains("Synchronize")
                .contains(podId)
                .contains(ctr)
                .contains("go-plugins")
                .contains("FROM_GO=" + value);
    }

    /** Blocks in CreateContainer until released; a cri4j NRI plugin on the proxy's socket. */
    static final class StuckHook implements Hook {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        @Override
        public String name() {
            return "stuck";
        }

        @Override
        public HookResult createContainer(PodSandbox pod, Container container) throws Exception {
            entered.countDown();
            release.await(30, TimeUnit.SECONDS);
            return HookResult.none();
        }
    }

    /** Polls {@code ss} until a unix socket of process {@code pid} holds bytes it has not read. */
    static void awaitUnreadInput(long pid) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        String owner = "pid=" + pid + ",";
        while (true) {
            Process ss =
                    new ProcessBuilder("ss", "-x", "-p", "-n").redirectErrorStream(true).start();
            String out = new String(ss.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(ss.waitFor()).as(out).isZero();
            for (String line : out.split("\n")) {
                String[] f = line.trim().split("\\s+");
                if (line.contains(owner) && f.length > 2 && f[2].matches("[1-9][0-9]*")) {
                    return;
                }
            }
            assertThat(System.nanoTime())
                    .as("a request waiting in the socket of process %d", pid)
                    .isLessThan(deadline);
            Thread.sleep(20); // polling a condition with a deadline
        }
    }

    static void signal(String signal, long pid) throws Exception {
        Process p =
                new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        assertThat(p.waitFor()).isZero();
    }

    @Test
    void aRequiredPluginThatIsNotConnectedFailsCreateContainerNamingIt() throws Exception {
        startProxy(
                "--nri-required-plugin",
                "guard",
                "--nri-failure-policy",
                "Ignore",
                "--nri-plugin-timeout",
                "guard=3s");
        PodSandboxConfig pod = pod("required");
        String podId = runPod(pod); // pods do not need it
        int before =
                rt().listContainers(ListContainersRequest.getDefaultInstance())
                        .getContainersCount();
        StatusRuntimeException refused =
                org.junit.jupiter.api.Assertions.assertThrows(
                        StatusRuntimeException.class,
                        () -> rt().createContainer(container(podId, pod, "app")));
        assertThat(refused.getStatus().getDescription())
                .contains("CreateContainer")
                .contains("required NRI plugin \"guard\" is not connected");
        assertThat(
                        rt().listContainers(ListContainersRequest.getDefaultInstance())
                                .getContainersCount())
                .as("containerd never got the container")
                .isEqualTo(before);

        NriGoPlugin guard = go("nri-logger", 10, "-name", "guard", "-add-env", "GUARDED");
        awaitLine("NRI plugin 10-guard registered");
        String ctr = rt().createContainer(container(podId, pod, "app")).getContainerId();
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        assertThat(exec(ctr, "env").lines()).contains("GUARDED=logger-pid-" + guard.pid());
    }

    @Test
    void aPluginThatDisconnectsMidCallFailsTheCallNamingIt() throws Exception {
        startProxy("--nri-failure-policy", "Fail");
        StuckHook stuck = new StuckHook();
        NriPlugin first =
                NriPlugin.builder(stuck)
                        .socket(dir.resolve("nri.sock"))
                        .name("stuck")
                        .index(10)
                        .noReconnect()
                        .build()
                        .start();
        toClose.add(first);
        NriGoPlugin logger = go("nri-logger", 20);
        awaitLine("NRI plugin 10-stuck registered", "NRI plugin 20-nri-logger registered");
        PodSandboxConfig pod = pod("disconnect");
        String podId = runPod(pod);
        int before =
                rt().listContainers(ListContainersRequest.getDefaultInstance())
                        .getContainersCount();
        signal("STOP", logger.pid()); // nri-logger cannot answer any more
        CompletableFuture<Throwable> call =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                rt().createContainer(container(podId, pod, "app"));
                                return null;
                            } catch (StatusRuntimeException e) {
                                return e;
                            }
                        });
        try {
            // the event runs (nri-logger is one of its hooks): let the first plugin answer, then
            // nri-logger goes away while the proxy waits for it
            assertThat(stuck.entered.await(60, TimeUnit.SECONDS)).isTrue();
        } finally {
            stuck.release.countDown();
        }
        // nri-logger goes only once the proxy's request to it is in its socket: killed earlier, it
        // would be gone before its turn, and the call would go on without it
        awaitUnreadInput(logger.pid());
        signal("KILL", logger.pid());
        assertThat(call.get(60, TimeUnit.SECONDS))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN);
                            assertThat(e.getStatus().getDescription())
                                    .contains("CreateContainer")
                                    .contains("\"nri-logger\"");
                        });
        awaitLine("NRI plugin nri-logger gone");
        assertThat(
                        rt().listContainers(ListContainersRequest.getDefaultInstance())
                                .getContainersCount())
                .as("containerd never got the container")
                .isEqualTo(before);
        // without it, the next creation goes through
        assertThat(rt().createContainer(container(podId, pod, "app")).getContainerId())
                .isNotEmpty();
    }
}

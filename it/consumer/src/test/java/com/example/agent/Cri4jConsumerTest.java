package com.example.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ListImagesRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.hook.cri.ForwardingCriInterceptor;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.imagepull.CriImagePullBackend;
import io.cri4j.imagepull.ImagePuller;
import io.cri4j.imagepull.PullRequest;
import io.cri4j.imagepull.PullResult;
import io.cri4j.nri.NriPlugin;
import io.cri4j.proxy.CriProxy;
import io.cri4j.streaming.CommandOptions;
import io.cri4j.streaming.RemoteCommand;
import io.cri4j.streaming.StreamingClient;
import io.cri4j.testing.fake.FakeCriExtension;
import io.grpc.ManagedChannel;
import io.grpc.StatusException;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Every published cri4j module used as a user's project uses it, with nothing on the class path but
 * what the project's POM brings: the fake runtime (cri-testing), a proxy in front of it (proxy-core)
 * with an interceptor (hook-api), CRI calls through the proxy (cri-api), an image pull through the
 * proxy (imagepull-core), and an exec through the streaming client into the fake's streaming server
 * (streaming-core), an NRI plugin registering with a runtime's socket (nri). One test per module; a new published module adds its dependency to both consumer
 * POMs (and README.md) and one test here.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Cri4jConsumerTest {

    static final String LABEL = "example.com/seen-by-proxy";

    @RegisterExtension static FakeCriExtension cri = FakeCriExtension.unixSocket();

    @TempDir static Path dir;

    static CriProxy proxy;
    static ManagedChannel channel;

    @BeforeAll
    static void startProxy() throws Exception {
        proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(cri.endpoint())
                        .addInterceptor(new LabelPods())
                        .build()
                        .start();
        channel = CriChannels.newChannel(proxy.listenEndpoint());
    }

    @AfterAll
    static void stopProxy() throws Exception {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (proxy != null) {
            proxy.close();
        }
    }

    /** cri-api, hook-api, proxy-core: calls reach the fake through the proxy, RunPodSandbox changed on the way. */
    @Test
    void callsGoThroughTheProxyAndItsInterceptor() {
        var runtime =
                RuntimeServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
        VersionRequest version = VersionRequest.newBuilder().setVersion("0.1.0").build();
        assertEquals(
                cri.runtimeService().version(version).getRuntimeName(),
                runtime.version(version).getRuntimeName());

        String pod =
                runtime.runPodSandbox(
                                RunPodSandboxRequest.newBuilder()
                                        .setConfig(pod("labelled"))
                                        .build())
                        .getPodSandboxId();

        var status =
                cri.runtimeService()
                        .podSandboxStatus(
                                PodSandboxStatusRequest.newBuilder().setPodSandboxId(pod).build())
                        .getStatus();
        assertEquals("true", status.getLabelsMap().get(LABEL));
        cri.calls().assertInOrder("Version", "RunPodSandbox", "PodSandboxStatus");
    }

    /** imagepull-core: ImagePuller with the CRI backend pulls through the proxy. */
    @Test
    void imagePullerPullsThroughTheProxy() throws Exception {
        String image = "registry.example:5000/app:1.2";
        try (ImagePuller puller =
                ImagePuller.builder(CriImagePullBackend.builder(proxy.listenEndpoint()).build())
                        .build()) {
            PullResult result =
                    puller.pull(PullRequest.of(image)).result().get(30, TimeUnit.SECONDS);
            assertFalse(result.imageId().isEmpty(), "image id of " + result);
        }
        cri.calls().assertInOrder("PullImage");
        assertTrue(
                cri
                        .imageService()
                        .listImages(ListImagesRequest.getDefaultInstance())
                        .getImagesList()
                        .stream()
                        .anyMatch(i -> i.getRepoTagsList().contains(image)),
                "the fake lists " + image);
    }

    /** streaming-core: Exec through the proxy answers the fake's streaming URL; StreamingClient runs it. */
    @Test
    void execThroughTheStreamingClient() throws Exception {
        String pod = cri.fakeRuntime().runPodSandbox(pod("exec"));
        String container =
                cri.fakeRuntime()
                        .runContainer(
                                pod,
                                ContainerConfig.newBuilder()
                                        .setMetadata(ContainerMetadata.newBuilder().setName("app"))
                                        .setImage(
                                                ImageSpec.newBuilder()
                                                        .setImage("registry.example:5000/app:1.2"))
                                        .build());
        String url =
                RuntimeServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(10, TimeUnit.SECONDS)
                        .exec(
                                ExecRequest.newBuilder()
                                        .setContainerId(container)
                                        .addAllCmd(
                                                List.of(
                                                        "sh",
                                                        "-c",
                                                        "read who; echo \"hello $who\"; exit 3"))
                                        .setStdin(true)
                                        .setStdout(true)
                                        .build())
                        .getUrl();

        try (StreamingClient client = StreamingClient.builder().build();
                RemoteCommand exec =
                        client.exec(
                                URI.create(url), new CommandOptions(true, true, false, false))) {
            try (OutputStream stdin = exec.stdin()) {
                stdin.write("cri4j\n".getBytes(UTF_8));
            }
            assertEquals("hello cri4j\n", new String(exec.stdout().readAllBytes(), UTF_8));
            assertEquals(3, exec.waitFor());
        }
    }

    private static PodSandboxConfig pod(String name) {
        return PodSandboxConfig.newBuilder()
                .setMetadata(
                        PodSandboxMetadata.newBuilder()
                                .setName(name)
                                .setNamespace("default")
                                .setUid(name))
                .build();
    }

    /** Labels every pod the proxy creates, so the test can see that the call went through the proxy. */
    static final class LabelPods extends ForwardingCriInterceptor {
        @Override
        public RunPodSandboxResponse runPodSandbox(
                RunPodSandboxRequest request,
                UnaryChain<RunPodSandboxRequest, RunPodSandboxResponse> chain)
                throws StatusException {
            return chain.proceed(
                    request.toBuilder()
                            .setConfig(request.getConfig().toBuilder().putLabels(LABEL, "true"))
                            .build());
        }
    }

    @Test
    void nriPluginSendsItsRegistrationOverNrisMultiplexer() throws Exception {
        Path socket = dir.resolve("nri.sock");
        Hook hook =
                new Hook() {
                    @Override
                    public String name() {
                        return "consumer";
                    }

                    @Override
                    public HookResult createContainer(
                            io.cri4j.hook.nri.v1alpha1.PodSandbox pod, io.cri4j.hook.nri.v1alpha1.Container c) {
                        return HookResult.none();
                    }
                };
        try (ServerSocketChannel runtime = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            runtime.bind(UnixDomainSocketAddress.of(socket));
            NriPlugin plugin = NriPlugin.builder(hook).socket(socket).index(10).build();
            CompletableFuture<Void> started =
                    CompletableFuture.runAsync(
                            () -> {
                                try {
                                    plugin.start();
                                } catch (IOException e) {
                                    throw new java.io.UncheckedIOException(e);
                                }
                            });
            try (SocketChannel conn = runtime.accept()) {
                ByteBuffer header = read(conn, 8);
                assertEquals(
                        2,
                        header.getInt(0),
                        "RegisterPlugin goes on the runtime service's mux connection");
                String frame = new String(read(conn, header.getInt(4)).array(), UTF_8);
                assertTrue(
                        frame.contains("nri.pkg.api.v1alpha1.Runtime")
                                && frame.contains("RegisterPlugin")
                                && frame.contains("consumer"),
                        frame);
            } // the stand-in runtime hangs up instead of registering the plugin
            ExecutionException e =
                    org.junit.jupiter.api.Assertions.assertThrows(
                            ExecutionException.class, () -> started.get(30, TimeUnit.SECONDS));
            assertTrue(
                    e.getCause().getMessage().contains("could not register"),
                    e.getCause().getMessage());
            plugin.close();
        }
    }

    private static ByteBuffer read(SocketChannel conn, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (conn.read(b) < 0) {
                throw new IOException("closed after " + b.position() + " of " + n + " bytes");
            }
        }
        return b;
    }
}

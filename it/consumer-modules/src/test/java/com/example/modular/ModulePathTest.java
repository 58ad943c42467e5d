package com.example.modular;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.PodSandboxStatus;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.imagepull.CriImagePullBackend;
import io.cri4j.imagepull.ImagePuller;
import io.cri4j.imagepull.PullRequest;
import io.cri4j.imagepull.PullResult;
import io.cri4j.nri.NriPlugin;
import io.cri4j.proxy.CriProxy;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.ManagedChannel;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The agent module at work on the module path: the proxy with the hook the module provides as a
 * service, CRI calls and an image pull through it, an NRI plugin's registration; and the cri4j
 * internals out of its reach at run time.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ModulePathTest {

    @TempDir Path dir;

    @Test
    void theAgentAndCri4jAreNamedModules() {
        assertEquals("com.example.modular", ModularAgent.class.getModule().getName());
        assertEquals("io.cri4j.proxy", CriProxy.class.getModule().getName());
        assertEquals("io.cri4j.cri", RuntimeServiceGrpc.class.getModule().getName());
        assertEquals("io.cri4j.hook", Hook.class.getModule().getName());
        assertEquals("io.cri4j.nri", NriPlugin.class.getModule().getName());
    }

    @Test
    void proxyRunsTheHookTheModuleProvides() throws Exception {
        try (FakeCriServer runtime =
                        FakeCriServer.builder()
                                .listen(CriEndpoint.unix(dir.resolve("runtime.sock")))
                                .build()
                                .start();
                CriProxy proxy =
                        ModularAgent.start(dir.resolve("proxy.sock"), runtime.endpoint())) {
            ManagedChannel channel = CriChannels.newChannel(proxy.listenEndpoint());
            try {
                var cri =
                        RuntimeServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(10, TimeUnit.SECONDS);
                String pod =
                        cri.runPodSandbox(
                                        RunPodSandboxRequest.newBuilder()
                                                .setConfig(
                                                        PodSandboxConfig.newBuilder()
                                                                .setMetadata(
                                                                        PodSandboxMetadata
                                                                                .newBuilder()
                                                                                .setName("p")
                                                                                .setNamespace(
                                                                                        "default")
                                                                                .setUid("p"))
                                                                .putLabels(
                                                                        TeamAnnotationHook.LABEL,
                                                                        "storage"))
                                                .build())
                                .getPodSandboxId();
                PodSandboxStatus status =
                        cri.podSandboxStatus(
                                        PodSandboxStatusRequest.newBuilder()
                                                .setPodSandboxId(pod)
                                                .build())
                                .getStatus();
                // toString: protobuf's reflection over the generated accessors, across modules
                assertEquals(
                        "storage",
                        status.getAnnotationsMap().get(TeamAnnotationHook.ANNOTATION),
                        status.toString());
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }

            String image = "registry.example:5000/app:1.2";
            try (ImagePuller puller =
                    ImagePuller.builder(CriImagePullBackend.builder(proxy.listenEndpoint()).build())
                            .build()) {
                PullResult result =
                        puller.pull(PullRequest.of(image)).result().get(30, TimeUnit.SECONDS);
                assertFalse(result.imageId().isEmpty(), "image id of " + result);
            }
        }
    }

    @Test
    void nriPluginSendsItsRegistration() throws Exception {
        Path socket = dir.resolve("nri.sock");
        Hook hook =
                new Hook() {
                    @Override
                    public String name() {
                        return "modular";
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
                                    throw new UncheckedIOException(e);
                                }
                            });
            try (SocketChannel conn = runtime.accept()) {
                ByteBuffer header = read(conn, 8);
                String frame = new String(read(conn, header.getInt(4)).array(), UTF_8);
                assertTrue(frame.contains("RegisterPlugin") && frame.contains("modular"), frame);
            } // the stand-in runtime hangs up instead of registering the plugin
            assertThrows(ExecutionException.class, () -> started.get(30, TimeUnit.SECONDS));
            plugin.close();
        }
    }

    /** Loading an internal class works (it is in the module); using it from here does not. */
    @Test
    void internalClassesAreOutOfReach() throws Exception {
        Module proxy = CriProxy.class.getModule();
        Module self = ModularAgent.class.getModule();
        for (String pkg : proxy.getPackages()) {
            if (pkg.contains(".internal")) {
                assertFalse(proxy.isExported(pkg, self), pkg + " is exported to " + self);
            }
        }
        String internal =
                proxy.getPackages().stream()
                        .filter(p -> p.contains(".internal"))
                        .findFirst()
                        .orElseThrow();
        Class<?> c =
                ModuleBoundariesTest.publicClassIn(
                        proxy.getLayer()
                                .configuration()
                                .findModule(proxy.getName())
                                .orElseThrow()
                                .reference(),
                        internal,
                        proxy.getClassLoader());
        assertThrows(
                IllegalAccessException.class,
                () -> MethodHandles.lookup().accessClass(c),
                c.getName());
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

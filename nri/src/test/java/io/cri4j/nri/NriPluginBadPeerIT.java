package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.CreateContainerRequest;
import io.cri4j.hook.nri.v1alpha1.CreateContainerResponse;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.RegisterPluginRequest;
import io.cri4j.nri.internal.proto.Response;
import io.cri4j.nri.internal.ttrpc.TtrpcFrame;
import io.grpc.Status;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A plugin whose runtime sends garbage, truncated and oversized frames: a clear error, the
 * connection closed where the stream cannot go on (and the plugin connects again), an error answer
 * where it can; the JVM keeps running and the plugin's threads and file descriptors are gone after
 * it closes.
 */
class NriPluginBadPeerIT {

    @TempDir Path dir;

    private RawNriHost host;
    private final BlockingQueue<Object> events = new LinkedBlockingQueue<>();
    private int threadsBefore;
    private OpenFds fdsBefore;

    private final Hook hook =
            new Hook() {
                @Override
                public String name() {
                    return "victim";
                }

                @Override
                public HookResult createContainer(PodSandbox pod, Container container) {
                    return HookResult.none();
                }
            };

    private NriPlugin plugin() {
        return NriPlugin.builder(hook)
                .socket(host.socket)
                .reconnect(Duration.ofMillis(50), Duration.ofMillis(200))
                .waitForRuntime()
                .listener(
                        new NriPlugin.Listener() {
                            @Override
                            public void registered(String runtimeName, String runtimeVersion) {
                                events.add("registered " + runtimeName);
                            }

                            @Override
                            public void disconnected(Throwable cause) {
                                events.add(cause == null ? "clean close" : cause);
                            }
                        })
                .build();
    }

    @BeforeEach
    void baseline() throws Exception {
        host = new RawNriHost(dir.resolve("nri.sock"));
        // one full cycle first: classes, Netty's shared executors and native library are loaded
        // once per JVM
        try (NriPlugin warm = plugin().start()) {
            host.acceptAndRegister();
            assertThat(events.poll(10, TimeUnit.SECONDS)).isEqualTo("registered raw-host");
        }
        host.dropPlugin();
        events.clear();
        awaitQuiet();
        threadsBefore = Thread.activeCount();
        fdsBefore = OpenFds.now();
    }

    @AfterEach
    void backToBaseline() throws Exception {
        host.close();
        awaitQuiet();
        // Netty's global executor thread ends one second after its last task
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (Thread.activeCount() > threadsBefore && System.nanoTime() < until) {
            Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().equals("globalEventExecutor"))
                    .findFirst()
                    .ifPresent(
                            t -> {
                                try {
                                    t.join(2000);
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                            });
        }
        assertThat(Thread.activeCount())
                .as(
                        "threads after the plugin closed: %s",
                        Thread.getAllStackTraces().keySet().stream()
                                .map(Thread::getName)
                                .sorted()
                                .toList())
                .isLessThanOrEqualTo(threadsBefore);
        assertThat(OpenFds.now().openedSince(fdsBefore))
                .as(
                        "sockets, pipes and event descriptors opened since the baseline, after the plugin closed")
                .isEmpty();
    }

    private void awaitQuiet() throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int threads = -1;
        while (System.nanoTime() < until) {
            Thread[] all = new Thread[Thread.activeCount() + 8];
            int n = Thread.enumerate(all);
            boolean busy = false;
            for (int i = 0; i < n; i++) {
                if (all[i].getName().startsWith("cri4j-nri-")) {
                    busy = true;
                    all[i].join(100);
                }
            }
            if (!busy) {
                return;
            }
            threads = n;
        }
        throw new TimeoutException(
                "plugin threads still running: "
                        + threads
                        + " "
                        + Thread.getAllStackTraces().keySet().stream()
                                .map(Thread::getName)
                                .filter(n -> n.startsWith("cri4j-nri-"))
                                .sorted()
                                .toList());
    }

    private Throwable nextDisconnect() throws InterruptedException {
        Object e = events.poll(10, TimeUnit.SECONDS);
        assertThat(e).as("a disconnect").isInstanceOf(Throwable.class);
        return (Throwable) e;
    }

    @Test
    void garbageEndsTheConnectionWithAClearErrorAndThePluginRegistersAgain() throws Exception {
        try (NriPlugin p = plugin().start()) {
            RegisterPluginRequest r = host.acceptAndRegister();
            assertThat(r.getPluginName()).isEqualTo("victim");
            assertThat(r.getPluginIdx()).isEqualTo("50");
            assertThat(events.poll(10, TimeUnit.SECONDS)).isEqualTo("registered raw-host");

            host.write("GET / HTTP/1.1\r\nHost: nri\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            assertThat(host.pluginClosed()).isTrue();
            assertThat(nextDisconnect())
                    .hasMessage(
                            "not NRI's multiplexer: frame header 474554202f204854 "
                                    + "announces 790644820 bytes on connection 1195725856, more than the 4194314 NRI allows");

            host.acceptAndRegister();
            assertThat(events.poll(10, TimeUnit.SECONDS)).isEqualTo("registered raw-host");
            assertThat(p.isRegistered()).isTrue();
        }
        assertThat(events).as("closing the plugin is not reported as a lost connection").isEmpty();
    }

    @Test
    void aFrameCutShortByTheRuntimeIsNamedInTheError() throws Exception {
        try (NriPlugin p = plugin().start()) {
            host.acceptAndRegister();
            events.take();
            host.write(new byte[] {0, 0, 0, 1, 0, 0, 0, 50, 0, 0, 0});
            host.dropPlugin();
            assertThat(nextDisconnect())
                    .hasMessage(
                            "the runtime closed the connection in the middle of a "
                                    + "frame (a mux frame on connection 1 lacking 47 payload bytes)");
            host.acceptAndRegister();
            assertThat(events.poll(10, TimeUnit.SECONDS)).isEqualTo("registered raw-host");
        }
    }

    @Test
    void aTtrpcHeaderWithItsReservedByteSetEndsTheConnection() throws Exception {
        try (NriPlugin p = plugin().start()) {
            host.acceptAndRegister();
            events.take();
            host.writeMux(1, new byte[] {1, 0, 0, 0, 0, 0, 0, 1, 1, 0});
            assertThat(host.pluginClosed()).isTrue();
            assertThat(nextDisconnect())
                    .hasMessageStartingWith("not a ttrpc frame: header 01000000000000010100");
        }
    }

    @Test
    void garbageInsideAFrameIsAnsweredWithInvalidArgumentAndTheConnectionStays() throws Exception {
        try (NriPlugin p = plugin().start()) {
            host.acceptAndRegister();
            events.take();
            Response bad = host.callRaw(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff});
            assertThat(bad.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
            assertThat(bad.getStatus().getMessage()).startsWith("unmarshal request error: ");

            Response badPayload =
                    host.call(
                            "CreateContainer",
                            io.cri4j.hook.nri.v1alpha1.Empty.newBuilder().build().toBuilder()
                                    .build()); // an empty CreateContainerRequest is valid protobuf
            assertThat(badPayload.hasStatus()).isFalse();
            Response garbagePayload =
                    host.callRaw(
                            io.cri4j.nri.internal.proto.Request.newBuilder()
                                    .setService("nri.pkg.api.v1alpha1.Plugin")
                                    .setMethod("CreateContainer")
                                    .setPayload(
                                            com.google.protobuf.ByteString.copyFrom(
                                                    new byte[] {0x0a, 0x7f, 0x01}))
                                    .build()
                                    .toByteArray());
            assertThat(garbagePayload.getStatus().getCode())
                    .isEqualTo(Status.Code.INVALID_ARGUMENT.value());
            assertThat(garbagePayload.getStatus().getMessage())
                    .startsWith("cannot read the CreateContainer request: ");

            Response ok =
                    host.call(
                            "CreateContainer",
                            CreateContainerRequest.newBuilder()
                                    .setPod(PodSandbox.newBuilder().setName("p"))
                                    .setContainer(Container.newBuilder().setName("c"))
                                    .build());
            assertThat(CreateContainerResponse.parseFrom(ok.getPayload()))
                    .isEqualTo(CreateContainerResponse.getDefaultInstance());
            assertThat(p.isRegistered()).isTrue();
            assertThat(events).isEmpty();
        }
    }

    @Test
    void aMessageOverFourMebibytesIsAnsweredResourceExhaustedAndTheConnectionStays()
            throws Exception {
        try (NriPlugin p = plugin().start()) {
            host.acceptAndRegister();
            events.take();
            int stream = host.nextStream();
            int length = 5 << 20;
            byte[] header =
                    ByteBuffer.allocate(10)
                            .putInt(length)
                            .putInt(stream)
                            .put((byte) 1)
                            .put((byte) 0)
                            .array();
            host.writeMux(1, header);
            byte[] chunk = new byte[1 << 20];
            for (int sent = 0; sent < length; sent += chunk.length) {
                host.writeMux(1, chunk);
            }
            RawNriHost.Frame f = host.read();
            assertThat(f.stream()).isEqualTo(stream);
            Response r = Response.parseFrom(f.data());
            assertThat(r.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED.value());
            assertThat(r.getStatus().getMessage())
                    .isEqualTo(
                            "message length 5242880 exceed maximum message size of "
                                    + TtrpcFrame.MAX_DATA_LENGTH);
            assertThat(
                            host.call(
                                            "CreateContainer",
                                            CreateContainerRequest.getDefaultInstance())
                                    .hasStatus())
                    .isFalse();
        }
    }
}

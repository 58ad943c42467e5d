package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.nri.v1alpha1.ConfigureResponse;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.SynchronizeRequest;
import io.cri4j.hook.nri.v1alpha1.SynchronizeResponse;
import io.cri4j.hook.nri.v1alpha1.UpdateContainersRequest;
import io.cri4j.nri.internal.proto.Response;
import io.cri4j.testing.real.NriGoPlugin;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Plugins that misbehave on an {@link NriHost}: garbage, a bad or late or duplicate
 * registration, unknown events, a Synchronize they cannot take. Each is dropped with a clear
 * reason, a well-behaved Go plugin on the same host keeps being served, and the host's threads
 * and file descriptors are back to their baseline after it closes.
 */
class NriHostBadPluginIT {

    @TempDir Path dir;

    private final RecordingHost host = new RecordingHost();
    private final BlockingQueue<String> events = new LinkedBlockingQueue<>();
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private NriHost nri;
    private int threadsBefore;
    private OpenFds fdsBefore;

    private NriHost.Builder builder() {
        return NriHost.builder(dir.resolve("nri.sock"))
                .listener(
                        new NriHost.Listener() {
                            @Override
                            public void registered(
                                    String name, int index, Set<HookEvent> subscribed) {
                                events.add("registered " + name);
                            }

                            @Override
                            public void disconnected(String name, Throwable cause) {
                                events.add(
                                        "disconnected "
                                                + name
                                                + ": "
                                                + (cause == null ? "closed" : cause.getMessage()));
                            }

                            @Override
                            public void rejected(String who, String reason) {
                                events.add("rejected " + who + ": " + reason);
                            }
                        });
    }

    private NriHost start(NriHost.Builder b) throws Exception {
        nri = b.build();
        toClose.add(nri);
        nri.start(host);
        return nri;
    }

    private RawNriPlugin raw() throws Exception {
        RawNriPlugin p = new RawNriPlugin(nri.socket());
        toClose.add(0, p);
        return p;
    }

    @BeforeEach
    void baseline() throws Exception {
        // one full cycle first: classes, Netty's native library and shared executors load once per
        // JVM
        try (NriHost warm = builder().build()) {
            warm.start(host);
            try (RawNriPlugin p = new RawNriPlugin(warm.socket())) {
                p.register("warm-up", "01");
                p.answer(
                        p.expect("Configure"),
                        ConfigureResponse.newBuilder().setEvents(1 << 3).build());
                p.answer(p.expect("Synchronize"), SynchronizeResponse.getDefaultInstance());
                assertThat(events.poll(10, TimeUnit.SECONDS)).isEqualTo("registered warm-up");
            }
            assertThat(events.poll(10, TimeUnit.SECONDS)).startsWith("disconnected warm-up");
        }
        awaitNoHostThreads();
        threadsBefore = Thread.activeCount();
        fdsBefore = OpenFds.now();
    }

    @AfterEach
    void backToBaseline() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
        awaitNoHostThreads();
        assertThat(Files.exists(dir.resolve("nri.sock"))).as("socket removed").isFalse();
        assertThat(Thread.activeCount())
                .as(
                        "threads after the host closed: %s",
                        Thread.getAllStackTraces().keySet().stream()
                                .map(Thread::getName)
                                .sorted()
                                .toList())
                .isLessThanOrEqualTo(threadsBefore);
        assertThat(OpenFds.now().openedSince(fdsBefore))
                .as(
                        "sockets, pipes and event descriptors opened since the baseline, after the host closed")
                .isEmpty();
    }

    private static void awaitNoHostThreads() throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < until) {
            Thread busy =
                    Thread.getAllStackTraces().keySet().stream()
                            .filter(
                                    t ->
                                            t.getName().startsWith("cri4j-nri-host")
                                                    || t.getName()
                                                            .startsWith("globalEventExecutor"))
                            .findFirst()
                            .orElse(null);
            if (busy == null) {
                return;
            }
            busy.join(200);
        }
        throw new TimeoutException("NRI host threads still running");
    }

    private String next() throws InterruptedException {
        String e = events.poll(10, TimeUnit.SECONDS);
        assertThat(e).as("a host event").isNotNull();
        return e;
    }

    /** NRI's Go logger, registered, as the plugin that must not be harmed. */
    private NriGoPlugin goodPlugin() throws Exception {
        NriGoPlugin p =
                NriGoPlugin.launch(nri.socket(), dir, "nri-logger", 20, "-add-env", "STILL_HERE");
        toClose.add(0, p);
        assertThat(next()).isEqualTo("registered nri-logger");
        return p;
    }

    private void assertGoodPluginServes() throws Exception {
        PodSandbox pod =
                PodSandbox.newBuilder().setId("p").setName("p").setNamespace("default").build();
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            assertThat(
                            chain.createContainer(
                                            pod,
                                            Container.newBuilder().setId("c").setName("c").build())
                                    .toCompletableFuture()
                                    .get(10, TimeUnit.SECONDS)
                                    .adjustment()
                                    .getEnvList())
                    .anySatisfy(kv -> assertThat(kv.getKey()).isEqualTo("STILL_HERE"));
        }
        assertThat(nri.hooks()).extracting(AsyncHook::name).containsExactly("nri-logger");
    }

    @Test
    void garbageIsDroppedWithAClearErrorAndOtherPluginsAreServed() throws Exception {
        start(builder());
        goodPlugin();
        RawNriPlugin p = raw();
        p.write("GET / HTTP/1.1\r\nHost: nri\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        assertThat(p.closedByRuntime()).isTrue();
        assertThat(next())
                .matches(
                        "rejected unregistered plugin \\(connection #2 from pid \\d+\\): "
                                + "unregistered plugin \\(connection #2 from pid \\d+\\) sent bytes that are not NRI: not NRI's "
                                + "multiplexer: frame header 474554202f204854 announces 790644820 bytes on connection 1195725856, "
                                + "more than the 4194314 NRI allows");
        assertGoodPluginServes();
    }

    @Test
    void aFloodOfBadConnectionsLogsAFewLinesNotOnePerConnection() throws Exception {
        start(builder());
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        java.io.PrintStream err = System.err;
        System.setErr(new java.io.PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            for (int i = 0; i < 200; i++) {
                try (RawNriPlugin p = new RawNriPlugin(nri.socket())) {
                    p.write("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    assertThat(p.closedByRuntime()).isTrue();
                }
                assertThat(next()).startsWith("rejected unregistered plugin");
            }
        } finally {
            System.setErr(err);
        }
        List<String> lines =
                captured.toString(StandardCharsets.UTF_8)
                        .lines()
                        .filter(l -> l.contains("sent bytes that are not NRI"))
                        .toList();
        assertThat(lines).as("log lines for 200 refused connections").hasSizeBetween(1, 10);
        assertThat(captured.size()).as("bytes logged").isLessThan(10_000);
    }

    @Test
    void aFrameCutShortIsNamedWhenThePluginGoes() throws Exception {
        start(builder());
        RawNriPlugin p = raw();
        p.write(new byte[] {0, 0, 0, 2, 0, 0, 0, 50, 0, 0, 0});
        p.close();
        assertThat(next())
                .endsWith(
                        "closed its connection in the middle of a frame (a mux frame on "
                                + "connection 2 lacking 47 payload bytes)");
    }

    @Test
    void badNamesAndIndexesAreRefusedInTheAnswerAndTheConnectionCloses() throws Exception {
        start(builder());
        goodPlugin();
        RawNriPlugin slash = raw();
        Response r = slash.register("bad/name", "10");
        assertThat(r.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
        assertThat(r.getStatus().getMessage())
                .endsWith(
                        "as 10-bad/name: invalid plugin name \"bad/name\": "
                                + "contains '/' (allowed: letters, digits, - _ . +)");
        assertThat(slash.closedByRuntime()).isTrue();
        assertThat(next())
                .startsWith("rejected unregistered plugin")
                .contains("invalid plugin name");

        RawNriPlugin idx = raw();
        r = idx.register("fine", "7");
        assertThat(r.getStatus().getMessage())
                .endsWith("invalid plugin index \"7\": must be two digits");
        assertThat(idx.closedByRuntime()).isTrue();
        assertThat(next()).contains("invalid plugin index");

        RawNriPlugin twin = raw();
        r = twin.register("nri-logger", "30");
        assertThat(r.getStatus().getMessage())
                .endsWith(
                        "as 30-nri-logger: a plugin named \"nri-logger\" is "
                                + "connected already (plugin 20-nri-logger)");
        assertThat(twin.closedByRuntime()).isTrue();
        assertThat(next()).contains("is connected already");
        assertGoodPluginServes();
    }

    @Test
    void aPluginThatDoesNotRegisterInTimeIsDropped() throws Exception {
        start(builder().registrationTimeout(Duration.ofMillis(300)));
        RawNriPlugin p = raw();
        assertThat(p.closedByRuntime()).isTrue();
        assertThat(next())
                .matches(
                        "rejected unregistered plugin \\(connection #1 from pid \\d+\\): "
                                + "unregistered plugin \\(connection #1 from pid \\d+\\) did not register within 300 ms");
    }

    @Test
    void updatesBeforeRegisteringAreRefused() throws Exception {
        start(builder());
        RawNriPlugin p = raw();
        Response r =
                p.call(
                        2,
                        "nri.pkg.api.v1alpha1.Runtime",
                        "UpdateContainers",
                        UpdateContainersRequest.getDefaultInstance());
        assertThat(r.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION.value());
        assertThat(r.getStatus().getMessage())
                .endsWith("asked for container updates before registering");
        assertThat(host.requests).isEmpty();
        r =
                p.call(
                        2,
                        "nri.pkg.api.v1alpha1.Runtime",
                        "Frobnicate",
                        UpdateContainersRequest.getDefaultInstance());
        assertThat(r.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED.value());
    }

    @Test
    void unknownEventsInTheSubscriptionDropThePlugin() throws Exception {
        start(builder());
        RawNriPlugin p = raw();
        p.register("greedy", "40");
        p.answer(
                p.expect("Configure"),
                ConfigureResponse.newBuilder().setEvents(1 << 20 | 1 << 3).build());
        assertThat(p.closedByRuntime()).isTrue();
        assertThat(next())
                .isEqualTo(
                        "rejected plugin 40-greedy: plugin 40-greedy subscribed to unknown "
                                + "events: 0x100000");
    }

    @Test
    void noEventsMeansEveryEventOfThePluginsNriVersion() throws Exception {
        start(builder());
        RawNriPlugin old = raw();
        old.register("old-stub", "30");
        old.answer(old.expect("Configure"), ConfigureResponse.getDefaultInstance());
        old.answer(old.expect("Synchronize"), SynchronizeResponse.getDefaultInstance());
        assertThat(next()).isEqualTo("registered old-stub");
        assertThat(HookEvent.nriMask(nri.hooks().get(0).events()))
                .as("NRI v0.8's 11 events")
                .isEqualTo(0x7ff);

        RawNriPlugin recent = raw();
        recent.register("new-stub", "40", "v0.12.0");
        recent.answer(recent.expect("Configure"), ConfigureResponse.getDefaultInstance());
        recent.answer(recent.expect("Synchronize"), SynchronizeResponse.getDefaultInstance());
        assertThat(next()).isEqualTo("registered new-stub");
        assertThat(HookEvent.nriMask(nri.hooks().get(1).events()))
                .as("NRI v0.12's 14 events")
                .isEqualTo(0x3fff);
    }

    @Test
    void aPluginThatCannotTakeASplitSynchronizeIsDroppedSayingSo() throws Exception {
        List<Container> big = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            big.add(
                    Container.newBuilder()
                            .setId("c" + i)
                            .setName("c" + i)
                            .putAnnotations("pad", "x".repeat(1 << 20))
                            .build());
        }
        host.snapshot = new RuntimeSnapshot(List.of(), big);
        start(builder());
        RawNriPlugin p = raw();
        p.register("old", "40");
        p.answer(p.expect("Configure"), ConfigureResponse.newBuilder().setEvents(1 << 3).build());
        RawNriPlugin.Frame sync = p.expect("Synchronize");
        SynchronizeRequest first = SynchronizeRequest.parseFrom(sync.request().getPayload());
        assertThat(first.getMore()).isTrue();
        assertThat(first.getContainersList())
                .hasSize(3)
                .extracting(Container::getId)
                .containsExactly("c0", "c1", "c2");
        p.answer(sync, SynchronizeResponse.getDefaultInstance()); // no more = true: an old plugin
        assertThat(p.closedByRuntime()).isTrue();
        assertThat(next())
                .isEqualTo(
                        "rejected plugin 40-old: plugin 40-old does not handle a Synchronize "
                                + "split in 2 messages (it answered the first part without more = true); the host's state is "
                                + "too large for one ttrpc message");
    }

    @Test
    void aContainerTooLargeForAnyMessageFailsTheSynchronizeWithItsName() throws Exception {
        host.snapshot =
                new RuntimeSnapshot(
                        List.of(),
                        List.of(
                                Container.newBuilder()
                                        .setId("huge-id")
                                        .setName("huge")
                                        .putAnnotations("pad", "x".repeat(5 << 20))
                                        .build()));
        start(builder());
        RawNriPlugin p = raw();
        p.register("any", "40");
        p.answer(p.expect("Configure"), ConfigureResponse.newBuilder().setEvents(1 << 3).build());
        assertThat(p.closedByRuntime()).isTrue();
        assertThat(next())
                .matches(
                        "rejected plugin 40-any: cannot synchronize plugin 40-any: container huge "
                                + "\\(huge-id\\) alone takes \\d+ bytes, more than one Synchronize message can carry within "
                                + "ttrpc's maximum message size of 4194304 bytes");
    }
}

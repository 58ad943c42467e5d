package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookConflictException;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookFailedException;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.HookTimeoutException;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.LinuxDevice;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.real.NriGoPlugin;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NRI's own Go plugins ({@code nri-logger}, {@code nri-device-injector}, NRI v0.8.0 as shipped
 * with containerd 2.1.4) connected to an {@link NriHost} on a private socket, driven through a
 * {@link HookChain} whose source is the host's hooks: the peer we did not write decides what
 * goes on the wire.
 */
class NriHostGoPluginsIT {

    @TempDir Path dir;

    private final RecordingHost host = new RecordingHost();
    private final BlockingQueue<String> registered = new LinkedBlockingQueue<>();
    private final BlockingQueue<String> gone = new LinkedBlockingQueue<>();
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private NriHost nri;

    private NriHost startHost(NriHost.Builder b) throws IOException {
        nri =
                b.listener(
                                new NriHost.Listener() {
                                    @Override
                                    public void registered(
                                            String name, int index, Set<HookEvent> events) {
                                        registered.add(name);
                                    }

                                    @Override
                                    public void disconnected(String name, Throwable cause) {
                                        gone.add(
                                                name
                                                        + ": "
                                                        + (cause == null
                                                                ? "closed"
                                                                : cause.getMessage()));
                                    }
                                })
                        .build();
        toClose.add(nri);
        nri.start(host);
        return nri;
    }

    private NriHost startHost() throws IOException {
        return startHost(NriHost.builder(dir.resolve("nri.sock")));
    }

    private NriGoPlugin go(String binary, int index, String... args) throws Exception {
        NriGoPlugin p = NriGoPlugin.launch(nri.socket(), dir, binary, index, args);
        toClose.add(0, p);
        return p;
    }

    private void awaitRegistered(String... names) throws Exception {
        List<String> got = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            String n = registered.poll(20, TimeUnit.SECONDS);
            if (n == null) {
                throw new TimeoutException(
                        "registered so far: " + got + "; expected " + List.of(names));
            }
            got.add(n);
        }
        assertThat(got).containsExactlyInAnyOrder(names);
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
    }

    static PodSandbox pod(String name, String... annotations) {
        PodSandbox.Builder b =
                PodSandbox.newBuilder()
                        .setId("pod-" + name)
                        .setName(name)
                        .setNamespace("default")
                        .setUid("uid-" + name);
        for (int i = 0; i < annotations.length; i += 2) {
            b.putAnnotations(annotations[i], annotations[i + 1]);
        }
        return b.build();
    }

    static Container container(PodSandbox pod, String name) {
        return Container.newBuilder()
                .setId("ctr-" + name)
                .setPodSandboxId(pod.getId())
                .setName(name)
                .addArgs("sleep")
                .addArgs("60")
                .addEnv("PATH=/bin")
                .build();
    }

    private static <T> T join(java.util.concurrent.CompletionStage<T> s) throws Exception {
        return s.toCompletableFuture().get(20, TimeUnit.SECONDS);
    }

    @Test
    void nriLoggerAndDeviceInjectorAdjustTheContainerInIndexOrder() throws Exception {
        startHost();
        NriGoPlugin logger =
                go("nri-logger", 20, "-add-env", "FROM_GO", "-add-annotation", "go.nri.io/seen");
        go("nri-device-injector", 10);
        awaitRegistered("nri-logger", "nri-device-injector");
        assertThat(nri.hooks())
                .extracting(AsyncHook::name)
                .containsExactly("nri-device-injector", "nri-logger");
        assertThat(nri.hooks()).extracting(h -> h.policy().index()).containsExactly(10, 20);

        PodSandbox pod =
                pod(
                        "devices",
                        "devices.nri.io/container.app",
                        "- path: /dev/cri4j-null\n  type: c\n  major: 1\n  minor: 3\n");
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            assertThat(chain.hookNames()).containsExactly("nri-device-injector", "nri-logger");
            HookResult r = join(chain.createContainer(pod, container(pod, "app")));
            ContainerAdjustment a = r.adjustment();
            // nri-logger sets what it adds to "logger-pid-<its pid>"
            String value = "logger-pid-" + logger.pid();
            assertThat(a.getEnvList())
                    .contains(KeyValue.newBuilder().setKey("FROM_GO").setValue(value).build());
            assertThat(a.getAnnotationsMap()).containsEntry("go.nri.io/seen", value);
            assertThat(a.getLinux().getDevicesList())
                    .extracting(
                            LinuxDevice::getPath,
                            LinuxDevice::getType,
                            LinuxDevice::getMajor,
                            LinuxDevice::getMinor)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple("/dev/cri4j-null", "c", 1L, 3L));

            // a container without the annotation gets only the logger's effect
            HookResult plain = join(chain.createContainer(pod, container(pod, "other")));
            assertThat(plain.adjustment().getLinux().getDevicesList()).isEmpty();
            assertThat(plain.adjustment().getAnnotationsMap())
                    .containsEntry("go.nri.io/seen", value);

            // events without an answer reach a v0.8 plugin as StateChange
            join(chain.startContainer(pod, container(pod, "app")));
            join(chain.removeContainer(pod, container(pod, "app")));
        }
        assertThat(Files.readString(dir.resolve("20-nri-logger.log")))
                .contains("StartContainer")
                .contains("RemoveContainer");
    }

    @Test
    void synchronizeGivesTheGoPluginTheHostsPodsAndContainers() throws Exception {
        PodSandbox p1 = pod("sync-one");
        PodSandbox p2 = pod("sync-two");
        host.snapshot =
                new RuntimeSnapshot(
                        List.of(p1, p2), List.of(container(p1, "first"), container(p2, "second")));
        startHost();
        go("nri-logger", 30);
        awaitRegistered("nri-logger");
        String log = Files.readString(dir.resolve("30-nri-logger.log"));
        assertThat(log)
                .contains("Synchronize")
                .contains("pod-sync-one")
                .contains("pod-sync-two")
                .contains("ctr-first")
                .contains("ctr-second");
    }

    @Test
    void aStateOverFourMebibytesReachesTheGoPluginSplit() throws Exception {
        List<PodSandbox> pods = new ArrayList<>();
        List<Container> containers = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            PodSandbox p = pod("big-" + i, "padding", "x".repeat(600 * 1024));
            pods.add(p);
            containers.add(container(p, "c" + i));
        }
        host.snapshot = new RuntimeSnapshot(pods, containers);
        // nri-logger logs all 6 MiB as YAML before it answers: room for a loaded machine
        startHost(NriHost.builder(dir.resolve("nri.sock")).requestTimeout(Duration.ofSeconds(15)));
        go("nri-logger", 30);
        awaitRegistered("nri-logger");
        String log = Files.readString(dir.resolve("30-nri-logger.log"));
        for (Container c : containers) {
            assertThat(log).contains(c.getId());
        }
    }

    @Test
    void twoPluginsSettingTheSameEnvVarConflictAndTheErrorNamesBoth() throws Exception {
        startHost();
        go("nri-logger", 10, "-name", "logger-a", "-add-env", "SHARED");
        go("nri-logger", 20, "-name", "logger-b", "-add-env", "SHARED");
        awaitRegistered("logger-a", "logger-b");
        PodSandbox pod = pod("conflict");
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "app"))))
                    .cause()
                    .isInstanceOf(HookConflictException.class)
                    .hasMessageContaining("\"logger-a\"")
                    .hasMessageContaining("\"logger-b\"")
                    .hasMessageContaining("SHARED");
        }
    }

    @Test
    void aPluginKilledMidCallFailsTheCallAndLeavesTheHooks() throws Exception {
        startHost();
        NriGoPlugin logger = go("nri-logger", 20, "-add-env", "X");
        awaitRegistered("nri-logger");
        PodSandbox pod = pod("killed");
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            signal("STOP", logger.pid()); // the plugin cannot answer
            CompletableFuture<HookResult> call =
                    chain.createContainer(pod, container(pod, "app")).toCompletableFuture();
            signal("KILL", logger.pid());
            assertThatThrownBy(() -> call.get(10, TimeUnit.SECONDS))
                    .cause()
                    .isInstanceOf(HookFailedException.class)
                    .hasMessageContaining("hook \"nri-logger\" failed")
                    .hasMessageContaining(
                            "plugin 20-nri-logger disconnected before answering CreateContainer");
            assertThat(gone.poll(10, TimeUnit.SECONDS)).startsWith("nri-logger");
            assertThat(nri.hooks()).isEmpty();
            // the next event goes on without it
            assertThat(join(chain.createContainer(pod, container(pod, "next"))).isEmpty()).isTrue();
        }
    }

    @Test
    void aPluginThatMissesTheRequestTimeoutFailsTheCallAndIsDropped() throws Exception {
        // containerd's rule: dropped at the first missed deadline
        startHost(
                NriHost.builder(dir.resolve("nri.sock"))
                        .requestTimeout(Duration.ofMillis(800))
                        .maxMissedDeadlines(1));
        NriGoPlugin logger = go("nri-logger", 20);
        awaitRegistered("nri-logger");
        PodSandbox pod = pod("slow");
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            signal("STOP", logger.pid());
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "app"))))
                    .cause()
                    .isInstanceOf(HookTimeoutException.class)
                    .hasMessage(
                            "CreateContainer: hook \"nri-logger\" did not answer within 800 ms");
            assertThat(gone.poll(10, TimeUnit.SECONDS))
                    .isEqualTo(
                            "nri-logger: plugin 20-nri-logger did not "
                                    + "answer CreateContainer within 800 ms; dropping it");
            assertThat(nri.hooks()).isEmpty();
        } finally {
            signal("KILL", logger.pid());
        }
    }

    @Test
    void oneMissedDeadlineFailsOnlyItsCallAndAPluginIsDroppedAfterMissingSeveralInARow()
            throws Exception {
        startHost(
                NriHost.builder(dir.resolve("nri.sock"))
                        .requestTimeout(Duration.ofMillis(800))
                        .maxMissedDeadlines(2));
        NriGoPlugin logger = go("nri-logger", 20, "-add-env", "ALIVE");
        awaitRegistered("nri-logger");
        PodSandbox pod = pod("late");
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            signal("STOP", logger.pid());
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "one"))))
                    .cause()
                    .isInstanceOf(HookTimeoutException.class)
                    .hasMessage(
                            "CreateContainer: hook \"nri-logger\" did not answer within 800 ms");
            // one miss: still listed, and served again once it answers
            assertThat(nri.hooks()).extracting(AsyncHook::name).containsExactly("nri-logger");
            signal("CONT", logger.pid());
            HookResult r = join(chain.createContainer(pod, container(pod, "two")));
            assertThat(r.adjustment().getEnvList()).extracting(KeyValue::getKey).contains("ALIVE");

            // the answer in time started the count again: one more miss is not two in a row
            signal("STOP", logger.pid());
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "three"))))
                    .cause()
                    .isInstanceOf(HookTimeoutException.class);
            assertThat(nri.hooks()).hasSize(1);
            assertThat(gone).isEmpty();
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "four"))))
                    .cause()
                    .isInstanceOf(HookTimeoutException.class);
            assertThat(gone.poll(10, TimeUnit.SECONDS))
                    .isEqualTo(
                            "nri-logger: plugin 20-nri-logger did not answer CreateContainer within"
                                    + " 800 ms, its 2 missed deadlines in a row; dropping it");
            assertThat(nri.hooks()).isEmpty();
        } finally {
            signal("KILL", logger.pid());
        }
    }

    @Test
    void eachPluginHasItsOwnRequestTimeoutByNameOrIndex() throws Exception {
        startHost(
                NriHost.builder(dir.resolve("nri.sock"))
                        .requestTimeout(Duration.ofSeconds(20))
                        .requestTimeout("patient", Duration.ofMillis(1500))
                        .requestTimeout(30, Duration.ofMillis(600))
                        .requestTimeout(10, Duration.ofSeconds(30)) // the name wins over the index
                        .failurePolicy(io.cri4j.hook.FailurePolicy.FAIL));
        NriGoPlugin patient = go("nri-logger", 10, "-name", "patient");
        NriGoPlugin quick = go("nri-logger", 30, "-name", "quick");
        awaitRegistered("patient", "quick");
        assertThat(nri.hooks())
                .extracting(h -> h.policy().timeout())
                .containsExactly(Duration.ofMillis(1750), Duration.ofMillis(850));
        PodSandbox pod = pod("timeouts");
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            signal("STOP", patient.pid());
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "a"))))
                    .cause()
                    .isInstanceOf(HookTimeoutException.class)
                    .hasMessage("CreateContainer: hook \"patient\" did not answer within 1500 ms");
            signal("CONT", patient.pid());
            signal("STOP", quick.pid());
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "b"))))
                    .cause()
                    .isInstanceOf(HookTimeoutException.class)
                    .hasMessage("CreateContainer: hook \"quick\" did not answer within 600 ms");
        } finally {
            signal("KILL", quick.pid());
        }
    }

    @Test
    void aRequiredPluginFailsCreateContainerClosedWhenAbsentOrLateWhereOthersAreSkipped()
            throws Exception {
        startHost(
                NriHost.builder(dir.resolve("nri.sock"))
                        .requestTimeout(Duration.ofMillis(800))
                        .failurePolicy(io.cri4j.hook.FailurePolicy.IGNORE)
                        .requirePlugin("guard"));
        PodSandbox pod = pod("required");
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            // absent: container creation is refused, naming it; other events go on
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "a"))))
                    .cause()
                    .isInstanceOf(HookFailedException.class)
                    .hasMessageContaining("hook \"guard\" failed")
                    .hasMessageContaining(
                            "required NRI plugin \"guard\" is not connected; containers are not"
                                    + " created without it");
            join(chain.runPodSandbox(pod));

            NriGoPlugin guard = go("nri-logger", 10, "-name", "guard", "-add-env", "GUARDED");
            NriGoPlugin optional = go("nri-logger", 20, "-name", "optional");
            awaitRegistered("guard", "optional");
            assertThat(nri.hooks())
                    .extracting(AsyncHook::name)
                    .containsExactly("guard", "optional");
            assertThat(nri.hooks().get(0).policy().failurePolicy())
                    .isEqualTo(io.cri4j.hook.FailurePolicy.FAIL);
            assertThat(nri.hooks().get(1).policy().failurePolicy())
                    .isEqualTo(io.cri4j.hook.FailurePolicy.IGNORE);

            // a late optional plugin is skipped under Ignore ...
            signal("STOP", optional.pid());
            HookResult r = join(chain.createContainer(pod, container(pod, "b")));
            assertThat(r.adjustment().getEnvList())
                    .extracting(KeyValue::getKey)
                    .contains("GUARDED");
            signal("CONT", optional.pid());
            // ... a late required one fails the call
            signal("STOP", guard.pid());
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "c"))))
                    .cause()
                    .isInstanceOf(HookTimeoutException.class)
                    .hasMessage("CreateContainer: hook \"guard\" did not answer within 800 ms");
            // gone: refused again
            signal("KILL", guard.pid());
            assertThat(gone.poll(10, TimeUnit.SECONDS)).startsWith("guard");
            assertThatThrownBy(() -> join(chain.createContainer(pod, container(pod, "d"))))
                    .cause()
                    .hasMessageContaining("required NRI plugin \"guard\" is not connected");
        }
    }

    @Test
    void closingTheHostTellsTheGoPluginsToShutDown() throws Exception {
        startHost();
        // NRI v0.12's nri-template logs its Shutdown handler; nri-logger's logs nothing for it
        NriGoPlugin template = NriGoPlugin.launchV012(nri.socket(), dir, "nri-template", 20);
        toClose.add(0, template);
        NriGoPlugin v08 = go("nri-logger", 30, "-name", "old-logger");
        awaitRegistered("nri-template", "old-logger");
        assertThat(Files.readString(template.logFile())).doesNotContain("Runtime shutting down");
        nri.close();
        assertThat(Files.readString(template.logFile())).contains("Runtime shutting down...");
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((template.isAlive() || v08.isAlive()) && System.nanoTime() < until) {
            Thread.onSpinWait();
        }
        assertThat(template.isAlive()).as("NRI v0.12's nri-template exits").isFalse();
        assertThat(v08.isAlive()).as("NRI v0.8's nri-logger exits").isFalse();
    }

    @Test
    void aThousandContainersAreSynchronizedWithinTheRegistrationTimeout() throws Exception {
        List<PodSandbox> pods = new ArrayList<>();
        List<Container> containers = new ArrayList<>();
        for (int p = 0; p < 100; p++) {
            PodSandbox pod =
                    pod("many-" + p, "io.kubernetes.pod.uid", "uid-" + p, "team", "t" + p % 7);
            pods.add(pod);
            for (int c = 0; c < 10; c++) {
                containers.add(
                        container(pod, "c" + p + "-" + c).toBuilder()
                                .putLabels("io.kubernetes.container.name", "c" + c)
                                .putAnnotations("io.kubernetes.container.restartCount", "0")
                                .addMounts(
                                        io.cri4j.hook.nri.v1alpha1.Mount.newBuilder()
                                                .setDestination("/data")
                                                .setSource("/srv/" + p)
                                                .setType("bind")
                                                .addOptions("rbind")
                                                .addOptions("ro"))
                                .build());
            }
        }
        host.snapshot = new RuntimeSnapshot(pods, containers);
        startHost(); // registration timeout 5 s, request timeout 2 s: NRI's defaults
        for (boolean v012 : new boolean[] {true, false}) {
            long start = System.nanoTime();
            NriGoPlugin p =
                    v012
                            ? NriGoPlugin.launchV012(nri.socket(), dir, "nri-logger", 40)
                            : go("nri-logger", 50, "-name", "old-logger");
            toClose.add(0, p);
            awaitRegistered(v012 ? "nri-logger" : "old-logger");
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            System.out.printf(
                    "NRI %s nri-logger: launched, registered and synchronized with %d pods and %d"
                            + " containers in %d ms%n",
                    v012 ? "v0.12" : "v0.8", pods.size(), containers.size(), millis);
            assertThat(millis).isLessThan(5000);
            String log = Files.readString(p.logFile());
            for (Container c : containers) {
                assertThat(log).contains(c.getId());
            }
        }
    }

    static void signal(String signal, long pid) throws Exception {
        Process p =
                new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        assertThat(p.waitFor()).isZero();
        if (signal.equals("STOP")) {
            // a stopped process shows state T in /proc
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!Files.readString(Path.of("/proc/" + pid + "/stat")).split(" ")[2].equals("T")) {
                if (System.nanoTime() > until) {
                    throw new TimeoutException("process " + pid + " did not stop");
                }
                Thread.onSpinWait();
            }
        }
    }
}

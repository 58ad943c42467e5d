package io.cri4j.examples.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.examples.demo.DemoAgent.Summary;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.PushedImage;
import io.cri4j.testing.real.TestImage;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The demo agent end to end: on the embedded fake, and on a real containerd with local-registry images. */
class DemoAgentIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @Test
    void runsToTheEndOnTheEmbeddedFake() throws Exception {
        StringWriter text = new StringWriter();
        Summary s =
                new DemoAgent(
                                new PrintWriter(text, true),
                                Optional.empty(),
                                DemoAgent.DEFAULT_IMAGES,
                                Duration.ofSeconds(30))
                        .run();
        assertThat(s.runtime()).startsWith("cri4j-fake");
        assertThat(s.imagesPresent())
                .containsExactlyInAnyOrder(
                        "docker.io/library/busybox:1.36", "registry.k8s.io/pause:3.9");
        assertThat(s.podStamp())
                .as("the interceptor's label, as the runtime reports it")
                .isEqualTo("cri4j-proxy");
        assertThat(s.hookedEnv()).isEqualTo("yes");
        assertThat(s.cpuset()).isEqualTo("0");
        assertThat(s.execOutput()).isEqualTo("hello cri4j, hooked=yes");
        assertThat(s.execExitCode()).isEqualTo(7);
        assertThat(text.toString())
                .contains("Summary")
                .contains("100% docker.io/library/busybox:1.36 SUCCEEDED");
        // the summary's figures come from the proxy's registry: the hook's Synchronize at the
        // start and the one CreateContainer it adjusted; the calls the demo made through the proxy
        DemoAgent.DemoMetrics m = s.metrics();
        assertThat(m.hookCalls()).as("Synchronize at the start, CreateContainer").isEqualTo(2);
        assertThat(m.hookOutcomes())
                .containsExactly(
                        java.util.Map.entry("adjusted", 1L), java.util.Map.entry("ok", 1L));
        assertThat(m.hookP50()).isPositive();
        assertThat(m.hookP99()).isGreaterThanOrEqualTo(m.hookP50());
        assertThat(m.interceptedCalls())
                .as("RunPodSandbox, CreateContainer and the pod and container lifecycle after")
                .isGreaterThanOrEqualTo(4);
        assertThat(m.relayedCalls()).as("Version, the pulls' status calls, ...").isPositive();
        assertThat(text.toString())
                .containsPattern(
                        "metrics +\\d+ calls through the proxy \\(\\d+ intercepted, \\d+ relayed as"
                                + " frames\\); hook calls 2, latency p50 \\d+\\.\\d\\d ms p99"
                                + " \\d+\\.\\d\\d ms, outcomes \\{adjusted=1, ok=1\\}");
        // the fake downloads with byte progress: the bars move, and the proxy shows each layer's
        // bytes
        assertThat(text.toString())
                .doesNotContain("?%")
                .containsPattern(
                        "\\[#*\\.+\\]\\s+[1-9]\\d?% docker\\.io/library/busybox:1\\.36 PULLING")
                .containsPattern(
                        "proxy saw docker\\.io/library/busybox:1\\.36 100% (\\d+\\.\\d)/\\1 MiB, layers [0-9a-f]{12} ");
    }

    @Test
    void runsToTheEndOnRealContainerd() throws Exception {
        PushedImage busybox = CONTAINERD.registry().push(TestImage.busybox());
        PushedImage pause = CONTAINERD.registry().push(TestImage.pause());
        StringWriter text = new StringWriter();
        Summary s =
                new DemoAgent(
                                new PrintWriter(text, true),
                                Optional.of(CONTAINERD.endpoint()),
                                List.of(busybox.reference(), pause.reference()),
                                Duration.ofSeconds(30))
                        .run();
        assertThat(s.runtime()).as(text.toString()).startsWith("containerd");
        assertThat(s.podStamp())
                .as("the interceptor's label, as containerd reports it")
                .isEqualTo("cri4j-proxy");
        assertThat(s.hookedEnv())
                .as("env injected by the hook, seen by a process in the container")
                .isEqualTo("yes");
        assertThat(s.execOutput()).isEqualTo("hello cri4j, hooked=yes");
        assertThat(s.execExitCode()).isEqualTo(7);
        assertThat(text.toString()).contains("2/2 images present");
    }
}

package io.cri4j.testing.fake;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.testing.real.Critest;
import io.cri4j.testing.real.CritestReport;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * cri-tools' CRI conformance specs ({@code critest}) against the fake runtime: every spec containerd
 * 2.3.4 passes on these machines passes against the fake, except the ones in {@link #NOT_EMULATED},
 * which name what the fake deliberately does not emulate. Those are skipped (named here and in
 * cri-testing's README); any other failure fails the test with critest's message.
 *
 * <p>The reference (focus and skip as below, the offline busybox image, critest of cri-tools
 * ba03eab, containerd 2.3.4 from {@code LocalContainerd.builder().containerd23WithNri()}): 45
 * passed of 57 run. containerd's 12 failures here: the eight Image Manager specs and the Image
 * Volume spec that pull public images (no internet on these machines), "execSync with timeout"
 * (busybox has no {@code pgrep}), and "listing pod sandbox metrics" (containerd 2.3.4 reports no
 * {@code container_threads}).
 */
class FakeCritestIT {

    /** What the run covers: the CRI specs, as the issue ran them. */
    static final String FOCUS = "Container|PodSandbox|Runtime info|Streaming|Image Manager";

    /** Not run: NRI has its own ITs; the rest need networking or kernel security features. */
    static final String SKIP =
            "NRI|Multiple Containers|portforward|Networking|Security Context|SELinux|AppArmor";

    /**
     * The specs the fake deliberately does not emulate, with the reason: kernel features of a real
     * container (the fake's container processes are host processes without namespaces, cgroups or
     * mounts of their own) and registry content (the fake downloads nothing).
     */
    static final Map<String, String> NOT_EMULATED = notEmulated();

    private static Map<String, String> notEmulated() {
        Map<String, String> m = new LinkedHashMap<>();
        String mounts =
                "mounts: the fake makes no mounts (its processes run in the host's mount namespace)";
        m.put(
                "[k8s.io] Container Mount Propagation runtime should support mount propagation"
                        + " mount with 'rprivate' should not support propagation",
                mounts);
        m.put(
                "[k8s.io] Container Mount Propagation runtime should support mount propagation"
                        + " mount with 'rslave' should support propagation from host to container",
                mounts);
        m.put(
                "[k8s.io] Container Mount Readonly runtime should support readonly mounts"
                        + " should support non-recursive readonly mounts",
                mounts);
        m.put(
                "[k8s.io] Container Mount Readonly runtime should support readonly mounts"
                        + " should support recursive readonly mounts",
                mounts);
        m.put(
                "[k8s.io] Container OOM runtime should output OOMKilled reason"
                        + " should terminate with exitCode 137 and reason OOMKilled",
                "memory limits: the fake's processes are in no cgroup of their own, never"
                        + " OOM-killed");
        m.put(
                "[k8s.io] Container runtime should support basic operations on container runtime"
                        + " should support execSync with timeout [Conformance]",
                "process isolation: ExecSync runs on the host, where `pgrep sleep` sees every"
                        + " host process (containerd fails it here too: busybox has no pgrep)");
        String sysctls = "sysctls: the fake's processes share the host's kernel namespaces";
        m.put(
                "[k8s.io] PodSandbox runtime should support sysctls should support safe sysctls",
                sysctls);
        m.put(
                "[k8s.io] PodSandbox runtime should support sysctls should support unsafe sysctls",
                sysctls);
        m.put(
                "[k8s.io] Image Manager image status get image fields should not have Uid|Username"
                        + " empty [Conformance]",
                "image content: the fake pulls no image config, so no image user (containerd"
                        + " fails it here too: public image)");
        String tags =
                "image content: which tags name one image is registry content the fake does not"
                        + " fetch; each reference is its own image (containerd fails it here too:"
                        + " public images)";
        m.put(
                "[k8s.io] Image Manager listImage should get exactly 3 repoTags in the result image"
                        + " [Conformance]",
                tags);
        m.put(
                "[k8s.io] Image Manager removing image by one tag should remove all tags"
                        + " [Conformance]",
                tags);
        m.put(
                "[k8s.io] Image Manager removing image from one registry should remove all tags"
                        + " from other registries [Conformance]",
                tags);
        return Map.copyOf(m);
    }

    @TempDir Path dir;

    static List<String> containerdPasses() throws java.io.IOException {
        try (var in =
                FakeCritestIT.class.getResourceAsStream("/critest-containerd-2.3.4-passed.txt")) {
            return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8)
                    .lines()
                    .filter(l -> !l.isBlank() && !l.startsWith("#"))
                    .toList();
        }
    }

    @Test
    void fakePassesWhatContainerdPassesExceptWhatItDoesNotEmulate() throws Exception {
        try (FakeCriServer fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("cri.sock")))
                        // a pull takes time, as on containerd (at least 8 ms for the smallest
                        // image): "public image should timeout if requested" gives it 1 ms
                        .pullRate(256L << 20)
                        .build()
                        .start()) {
            // Go's RE2 reads \Q...\E as a literal: each not-emulated spec is skipped by its name
            String skip =
                    SKIP
                            + NOT_EMULATED.keySet().stream()
                                    .map(n -> "|\\Q" + n + "\\E")
                                    .collect(Collectors.joining());
            CritestReport report =
                    Critest.builder()
                            .runtimeEndpoint(fake.endpoint())
                            .testImage("127.0.0.1:5000/cri4j/busybox:1.0")
                            .focus(FOCUS)
                            .skip(skip)
                            .timeout(Duration.ofMinutes(8))
                            .run();
            List<CritestReport.Spec> unexpected = report.failed();
            assertThat(unexpected)
                    .as("specs failing against the fake:\n%s", report.summary())
                    .isEmpty();
            List<String> passed = report.passed().stream().map(CritestReport.Spec::name).toList();
            assertThat(containerdPasses())
                    .as("what containerd 2.3.4 passes, against the fake:\n%s", report.summary())
                    .filteredOn(n -> !NOT_EMULATED.containsKey(n))
                    .isSubsetOf(passed);
            assertThat(report.specs())
                    .as("the not-emulated specs are skipped by name")
                    .filteredOn(s -> NOT_EMULATED.containsKey(s.name()))
                    .allMatch(s -> s.state().equals("skipped"));
        }
    }
}

package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.Hook;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.real.ContainerdExtension;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A runtime with more state than one ttrpc message holds (over 4 MiB of containers): it splits
 * Synchronize into messages with {@code more = true}; the plugin answers each and calls the hook
 * once, with every container. A subclass names the runtime: containerd 2.1.4 ({@link
 * NriSynchronizeLargeIT}), 2.3.4 ({@link NriSynchronizeLargeContainerd23IT}).
 */
abstract class NriSynchronizeLargeCases {

    @TempDir Path tmp;

    /** The runtime under test. */
    abstract ContainerdExtension containerd();

    @Test
    void aSynchronizeSplitByContainerdReachesTheHookWhole() throws Exception {
        Map<String, String> env = new LinkedHashMap<>();
        for (int i = 0; i < 800; i++) {
            env.put("CRI4J_FILLER_" + i, "x".repeat(60));
        }
        Set<String> created = new HashSet<>();
        try (Pods pods = new Pods(containerd().containerd(), tmp)) {
            // several pods: containerd 2.x scales the pods per message down with the containers,
            // and
            // with a single pod it gets to 0 pods per message and sends empty messages until its
            // timeout
            for (int p = 0; p < 4; p++) {
                Pods.Pod pod = pods.runPod("large-" + p, Map.of());
                for (int i = 0; i < 20; i++) {
                    created.add(pods.create(pod, "c" + i, env));
                }
            }
            CompletableFuture<List<Container>> seen = new CompletableFuture<>();
            Hook hook =
                    new Hook() {
                        @Override
                        public String name() {
                            return "large-sync";
                        }

                        @Override
                        public List<ContainerUpdate> synchronize(
                                List<PodSandbox> ps, List<Container> cs) {
                            if (!seen.complete(cs)) {
                                throw new AssertionError("synchronize called twice");
                            }
                            return List.of();
                        }

                        @Override
                        public void removeContainer(PodSandbox p, Container c) {}
                    };
            try (NriPlugin plugin =
                    NriPlugin.builder(hook).socket(containerd().nriSocket()).build().start()) {
                List<Container> containers = seen.get(30, TimeUnit.SECONDS);
                long bytes = containers.stream().mapToLong(Container::getSerializedSize).sum();
                assertThat(bytes).as("more than one ttrpc message holds").isGreaterThan(4L << 20);
                assertThat(containers).extracting(Container::getId).containsAll(created);
                assertThat(plugin.isRegistered()).isTrue();
            }
        }
    }
}

package io.cri4j.nri.internal.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.SynchronizeRequest;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class SyncSplitterTest {

    private static PodSandbox pod(int i, int pad) {
        return PodSandbox.newBuilder()
                .setId("pod-" + i)
                .setName("p" + i)
                .setNamespace("ns")
                .putAnnotations("pad", "x".repeat(pad))
                .build();
    }

    private static Container ctr(int i, int pad) {
        return Container.newBuilder()
                .setId("ctr-" + i)
                .setName("c" + i)
                .putAnnotations("pad", "x".repeat(pad))
                .build();
    }

    @Test
    void aStateThatFitsIsOneMessageWithoutMore() {
        List<SynchronizeRequest> m =
                SyncSplitter.split(
                        List.of(pod(0, 10)), List.of(ctr(0, 10)), SyncSplitter.MAX_MESSAGE);
        assertThat(m)
                .containsExactly(
                        SynchronizeRequest.newBuilder()
                                .addPods(pod(0, 10))
                                .addContainers(ctr(0, 10))
                                .build());
        assertThat(SyncSplitter.split(List.of(), List.of(), 100))
                .containsExactly(SynchronizeRequest.getDefaultInstance());
    }

    @Test
    void aLargeStateIsCutInOrderEveryMessageWithinTheLimitAndOnlyTheLastWithoutMore() {
        List<PodSandbox> pods = new ArrayList<>();
        List<Container> ctrs = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            pods.add(pod(i, 50 + i));
            ctrs.add(ctr(i, 90 + 3 * i));
        }
        int limit = 1000;
        List<SynchronizeRequest> m = SyncSplitter.split(pods, ctrs, limit);
        assertThat(m.size()).isGreaterThan(5);
        List<PodSandbox> allPods = new ArrayList<>();
        List<Container> allCtrs = new ArrayList<>();
        for (int i = 0; i < m.size(); i++) {
            SynchronizeRequest r = m.get(i);
            assertThat(r.getSerializedSize()).isLessThanOrEqualTo(limit);
            assertThat(r.getMore()).isEqualTo(i < m.size() - 1);
            assertThat(r.getPodsCount() + r.getContainersCount()).isPositive();
            allPods.addAll(r.getPodsList());
            allCtrs.addAll(r.getContainersList());
        }
        assertThat(allPods).isEqualTo(pods);
        assertThat(allCtrs).isEqualTo(ctrs);
    }

    @Test
    void aMessageIsFilledToTheLimitExactly() {
        Container c = ctr(0, 100);
        int one =
                SynchronizeRequest.newBuilder()
                        .addContainers(c)
                        .setMore(true)
                        .build()
                        .getSerializedSize();
        int two =
                SynchronizeRequest.newBuilder()
                        .addContainers(c)
                        .addContainers(c)
                        .setMore(true)
                        .build()
                        .getSerializedSize();
        assertThat(SyncSplitter.split(List.of(), List.of(c, c, c, c), two)).hasSize(2);
        assertThat(SyncSplitter.split(List.of(), List.of(c, c, c, c), two - 1)).hasSize(4);
        assertThat(SyncSplitter.split(List.of(), List.of(c), one)).hasSize(1);
    }

    @Test
    void anObjectLargerThanAMessageIsNamed() {
        assertThatThrownBy(() -> SyncSplitter.split(List.of(pod(7, 2000)), List.of(), 1000))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("pod ns/p7 (pod-7) alone takes 20");
        assertThatThrownBy(() -> SyncSplitter.split(List.of(), List.of(ctr(3, 2000)), 1000))
                .hasMessageStartingWith("container c3 (ctr-3) alone takes");
    }
}

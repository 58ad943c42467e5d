package io.cri4j.nri.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.CreateContainerRequest;
import io.cri4j.hook.nri.v1alpha1.CreateContainerResponse;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.LinuxCPU;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.StartContainerResponse;
import io.cri4j.hook.nri.v1alpha1.StopContainerResponse;
import io.cri4j.hook.nri.v1alpha1.UpdateContainerRequest;
import io.cri4j.hook.nri.v1alpha1.UpdateContainerResponse;
import io.cri4j.hook.nri.v1alpha1.UpdatePodSandboxRequest;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The host's dispatch table, derived from NRI's descriptors, against the generated messages. */
class PluginEventsTest {

    private static final PodSandbox POD =
            PodSandbox.newBuilder().setId("pod-1").setName("p").setNamespace("ns").build();
    private static final Container CTR =
            Container.newBuilder().setId("ctr-1").setName("c").setPodSandboxId("pod-1").build();
    private static final LinuxResources RES =
            LinuxResources.newBuilder().setCpu(LinuxCPU.newBuilder().setCpus("0-1")).build();
    private static final LinuxResources OVERHEAD =
            LinuxResources.newBuilder().setCpu(LinuxCPU.newBuilder().setMems("0")).build();

    @Test
    void
            hasEveryNriEventAsTheMethodOfItsNameAndSendsAsStateChangeOnlyTheAnswerlessPodAndContainerEvents() {
        Set<HookEvent> stateChange = EnumSet.noneOf(HookEvent.class);
        for (HookEvent e : HookEvent.values()) {
            if (e == HookEvent.ADJUST_POD_SANDBOX) {
                continue;
            }
            PluginEvents.Rpc rpc = PluginEvents.of(e);
            assertThat(rpc.method()).isEqualTo(e.displayName());
            if (rpc.stateChange()) {
                stateChange.add(e);
            }
        }
        assertThat(stateChange)
                .containsExactlyInAnyOrder(
                        HookEvent.RUN_POD_SANDBOX,
                        HookEvent.POST_UPDATE_POD_SANDBOX,
                        HookEvent.STOP_POD_SANDBOX,
                        HookEvent.REMOVE_POD_SANDBOX,
                        HookEvent.POST_CREATE_CONTAINER,
                        HookEvent.START_CONTAINER,
                        HookEvent.POST_START_CONTAINER,
                        HookEvent.POST_UPDATE_CONTAINER,
                        HookEvent.REMOVE_CONTAINER);
    }

    @Test
    void buildsTheRequestsTheGeneratedBuildersBuild() {
        assertThat(PluginEvents.of(HookEvent.CREATE_CONTAINER).request(POD, CTR, null, null))
                .isEqualTo(
                        CreateContainerRequest.newBuilder().setPod(POD).setContainer(CTR).build());
        assertThat(PluginEvents.of(HookEvent.UPDATE_CONTAINER).request(POD, CTR, null, RES))
                .isEqualTo(
                        UpdateContainerRequest.newBuilder()
                                .setPod(POD)
                                .setContainer(CTR)
                                .setLinuxResources(RES)
                                .build());
        assertThat(
                        PluginEvents.of(HookEvent.UPDATE_POD_SANDBOX)
                                .request(POD, null, OVERHEAD, RES)
                                .toByteArray())
                .isEqualTo(
                        UpdatePodSandboxRequest.newBuilder()
                                .setPod(POD)
                                .setOverheadLinuxResources(OVERHEAD)
                                .setLinuxResources(RES)
                                .build()
                                .toByteArray());
    }

    @Test
    void readsTheAnswersFieldsIntoAResult() throws Exception {
        ContainerAdjustment adjust =
                ContainerAdjustment.newBuilder()
                        .addEnv(KeyValue.newBuilder().setKey("A").setValue("1"))
                        .build();
        ContainerUpdate update = ContainerUpdate.newBuilder().setContainerId("other").build();
        ContainerEviction evict =
                ContainerEviction.newBuilder().setContainerId("victim").setReason("r").build();
        HookResult created =
                PluginEvents.of(HookEvent.CREATE_CONTAINER)
                        .result(
                                CreateContainerResponse.newBuilder()
                                        .setAdjust(adjust)
                                        .addUpdate(update)
                                        .addEvict(evict)
                                        .build()
                                        .toByteArray());
        assertThat(created)
                .isEqualTo(
                        new HookResult(
                                adjust, java.util.List.of(update), java.util.List.of(evict)));
        assertThat(
                        PluginEvents.of(HookEvent.STOP_CONTAINER)
                                .result(
                                        StopContainerResponse.newBuilder()
                                                .addUpdate(update)
                                                .build()
                                                .toByteArray()))
                .isEqualTo(HookResult.update(java.util.List.of(update)));
        assertThat(PluginEvents.of(HookEvent.CREATE_CONTAINER).result(new byte[0]))
                .isEqualTo(HookResult.none());
    }

    @Test
    void readsARequestAndWritesTheAnswerAsThePluginSide() throws Exception {
        PluginEvents.Rpc update = PluginEvents.ofMethod("UpdatePodSandbox");
        assertThat(update.event()).isEqualTo(HookEvent.UPDATE_POD_SANDBOX);
        Message r =
                update.parseRequest(
                        UpdatePodSandboxRequest.newBuilder()
                                .setPod(POD)
                                .setOverheadLinuxResources(OVERHEAD)
                                .setLinuxResources(RES)
                                .build()
                                .toByteArray());
        assertThat(update.pod(r)).isEqualTo(POD);
        assertThat(update.container(r)).as("a pod event has no container").isNull();
        assertThat(update.overhead(r)).isEqualTo(OVERHEAD);
        assertThat(update.resources(r)).isEqualTo(RES);
        assertThat(PluginEvents.ofMethod("Configure")).as("not a per-event call").isNull();

        ContainerAdjustment adjust =
                ContainerAdjustment.newBuilder()
                        .addEnv(KeyValue.newBuilder().setKey("A").setValue("1"))
                        .build();
        ContainerUpdate up = ContainerUpdate.newBuilder().setContainerId("other").build();
        ContainerEviction evict = ContainerEviction.newBuilder().setContainerId("victim").build();
        HookResult all = new HookResult(adjust, java.util.List.of(up), java.util.List.of(evict));
        PluginEvents.Rpc create = PluginEvents.ofMethod("CreateContainer");
        assertThat(create.answer(all))
                .isEqualTo(
                        CreateContainerResponse.newBuilder()
                                .setAdjust(adjust)
                                .addUpdate(up)
                                .addEvict(evict)
                                .build());
        assertThat(create.answer(HookResult.none()))
                .as("an empty adjustment is left out, as Go leaves out a nil one")
                .isEqualTo(CreateContainerResponse.getDefaultInstance());
        PluginEvents.Rpc stop = PluginEvents.ofMethod("StopContainer");
        assertThat(stop.answersEvictions()).isFalse();
        assertThat(stop.answersAdjustment()).isFalse();
        assertThat(stop.answer(all))
                .isEqualTo(StopContainerResponse.newBuilder().addUpdate(up).build());
        assertThat(PluginEvents.ofMethod("UpdateContainer").answer(all))
                .isEqualTo(
                        UpdateContainerResponse.newBuilder().addUpdate(up).addEvict(evict).build());
        assertThat(PluginEvents.ofMethod("StartContainer").answer(all))
                .isEqualTo(StartContainerResponse.getDefaultInstance());
    }
}

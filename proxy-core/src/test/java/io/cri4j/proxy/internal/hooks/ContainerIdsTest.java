package io.cri4j.proxy.internal.hooks;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.CheckpointContainerRequest;
import io.cri4j.cri.v1.CheckpointPodRequest;
import io.cri4j.cri.v1.Container;
import io.cri4j.cri.v1.ContainerAttributes;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerFilter;
import io.cri4j.cri.v1.ContainerMetrics;
import io.cri4j.cri.v1.ContainerStats;
import io.cri4j.cri.v1.ContainerStatsFilter;
import io.cri4j.cri.v1.ContainerStatsRequest;
import io.cri4j.cri.v1.ContainerStatsResponse;
import io.cri4j.cri.v1.ContainerStatus;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.LinuxPodSandboxStats;
import io.cri4j.cri.v1.ListContainerStatsRequest;
import io.cri4j.cri.v1.ListContainerStatsResponse;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListContainersResponse;
import io.cri4j.cri.v1.ListPodSandboxMetricsResponse;
import io.cri4j.cri.v1.ListPodSandboxStatsResponse;
import io.cri4j.cri.v1.PodSandboxMetrics;
import io.cri4j.cri.v1.PodSandboxStats;
import io.cri4j.cri.v1.PodSandboxStatusResponse;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.ReopenContainerLogRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StreamContainerStatsResponse;
import io.cri4j.cri.v1.StreamContainersRequest;
import io.cri4j.cri.v1.StreamContainersResponse;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.grpc.MethodDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class ContainerIdsTest {
    private static final String P = "a".repeat(64); // the proxy's id
    private static final String B = "b".repeat(64); // the runtime's id
    private static final String POD = "c".repeat(64);

    /**
     * The proto's rule, read from its descriptors: a string field named {@code container_id},
     * repeated {@code container_ids}, or {@code id} of the messages that describe a container.
     */
    private static final java.util.Set<String> CONTAINER_ID_MESSAGES =
            java.util.Set.of(
                    "Container",
                    "ContainerAttributes",
                    "ContainerFilter",
                    "ContainerStatus",
                    "ContainerStatsFilter");

    static boolean isId(Descriptor d, FieldDescriptor f) {
        if (f.getType() != FieldDescriptor.Type.STRING) {
            return false;
        }
        String n = f.getName();
        return (n.equals("container_id") && !f.isRepeated())
                || (n.equals("container_ids") && f.isRepeated())
                || (n.equals("id")
                        && !f.isRepeated()
                        && CONTAINER_ID_MESSAGES.contains(d.getName()));
    }

    /** Whether messages of type {@code d} hold a container id at some depth, by the rule above. */
    static boolean carries(Descriptor d, java.util.Set<Descriptor> seen) {
        if (!seen.add(d)) {
            return false;
        }
        for (FieldDescriptor f : d.getFields()) {
            if (isId(d, f)
                    || (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE
                            && carries(f.getMessageType(), seen))) {
                return true;
            }
        }
        return false;
    }

    private static ContainerIds ids() {
        ContainerIds ids = new ContainerIds();
        ids.put(P, B);
        return ids;
    }

    /**
     * Each method that carries a container id: the client's request (proxy's id) and what the
     * runtime gets; the runtime's answer and what the client gets. {@code null}: that side carries
     * no id.
     */
    static Stream<Arguments> methods() {
        return Stream.of(
                row(
                        "CreateContainer",
                        null,
                        null,
                        CreateContainerResponse.newBuilder().setContainerId(B).build(),
                        CreateContainerResponse.newBuilder().setContainerId(P).build()),
                row(
                        "StartContainer",
                        StartContainerRequest.newBuilder().setContainerId(P).build(),
                        StartContainerRequest.newBuilder().setContainerId(B).build(),
                        null,
                        null),
                row(
                        "StopContainer",
                        StopContainerRequest.newBuilder().setContainerId(P).setTimeout(3).build(),
                        StopContainerRequest.newBuilder().setContainerId(B).setTimeout(3).build(),
                        null,
                        null),
                row(
                        "RemoveContainer",
                        RemoveContainerRequest.newBuilder().setContainerId(P).build(),
                        RemoveContainerRequest.newBuilder().setContainerId(B).build(),
                        null,
                        null),
                row(
                        "ContainerStatus",
                        ContainerStatusRequest.newBuilder().setContainerId(P).build(),
                        ContainerStatusRequest.newBuilder().setContainerId(B).build(),
                        statusResponse(B, true),
                        statusResponse(P, false)),
                row(
                        "UpdateContainerResources",
                        UpdateContainerResourcesRequest.newBuilder().setContainerId(P).build(),
                        UpdateContainerResourcesRequest.newBuilder().setContainerId(B).build(),
                        null,
                        null),
                row(
                        "ReopenContainerLog",
                        ReopenContainerLogRequest.newBuilder().setContainerId(P).build(),
                        ReopenContainerLogRequest.newBuilder().setContainerId(B).build(),
                        null,
                        null),
                row(
                        "ExecSync",
                        ExecSyncRequest.newBuilder().setContainerId(P).addCmd("true").build(),
                        ExecSyncRequest.newBuilder().setContainerId(B).addCmd("true").build(),
                        null,
                        null),
                row(
                        "Exec",
                        ExecRequest.newBuilder().setContainerId(P).addCmd("sh").build(),
                        ExecRequest.newBuilder().setContainerId(B).addCmd("sh").build(),
                        null,
                        null),
                row(
                        "Attach",
                        AttachRequest.newBuilder().setContainerId(P).setStdin(true).build(),
                        AttachRequest.newBuilder().setContainerId(B).setStdin(true).build(),
                        null,
                        null),
                row(
                        "ContainerStats",
                        ContainerStatsRequest.newBuilder().setContainerId(P).build(),
                        ContainerStatsRequest.newBuilder().setContainerId(B).build(),
                        ContainerStatsResponse.newBuilder().setStats(stats(B)).build(),
                        ContainerStatsResponse.newBuilder().setStats(stats(P)).build()),
                row(
                        "ListContainers",
                        ListContainersRequest.newBuilder()
                                .setFilter(
                                        ContainerFilter.newBuilder().setId(P).setPodSandboxId(POD))
                                .build(),
                        ListContainersRequest.newBuilder()
                                .setFilter(
                                        ContainerFilter.newBuilder().setId(B).setPodSandboxId(POD))
                                .build(),
                        ListContainersResponse.newBuilder()
                                .addContainers(container(B, true))
                                .addContainers(container("other", false))
                                .build(),
                        ListContainersResponse.newBuilder()
                                .addContainers(container(P, false))
                                .addContainers(container("other", false))
                                .build()),
                row(
                        "ListContainerStats",
                        ListContainerStatsRequest.newBuilder()
                                .setFilter(ContainerStatsFilter.newBuilder().setId(P))
                                .build(),
                        ListContainerStatsRequest.newBuilder()
                                .setFilter(ContainerStatsFilter.newBuilder().setId(B))
                                .build(),
                        ListContainerStatsResponse.newBuilder()
                                .addStats(stats(B))
                                .addStats(stats("other"))
                                .build(),
                        ListContainerStatsResponse.newBuilder()
                                .addStats(stats(P))
                                .addStats(stats("other"))
                                .build()),
                row(
                        "CheckpointContainer",
                        CheckpointContainerRequest.newBuilder().setContainerId(P).build(),
                        CheckpointContainerRequest.newBuilder().setContainerId(B).build(),
                        null,
                        null),
                row(
                        "CheckpointPod",
                        CheckpointPodRequest.newBuilder()
                                .setPodSandboxId(POD)
                                .addContainerIds(P)
                                .addContainerIds("other")
                                .build(),
                        CheckpointPodRequest.newBuilder()
                                .setPodSandboxId(POD)
                                .addContainerIds(B)
                                .addContainerIds("other")
                                .build(),
                        null,
                        null),
                row(
                        "GetContainerEvents",
                        null,
                        null,
                        ContainerEventResponse.newBuilder()
                                .setContainerId(B)
                                .addContainersStatuses(ContainerStatus.newBuilder().setId(B))
                                .build(),
                        ContainerEventResponse.newBuilder()
                                .setContainerId(P)
                                .addContainersStatuses(ContainerStatus.newBuilder().setId(P))
                                .build()),
                row(
                        "PodSandboxStatus",
                        null,
                        null,
                        PodSandboxStatusResponse.newBuilder()
                                .addContainersStatuses(ContainerStatus.newBuilder().setId(B))
                                .build(),
                        PodSandboxStatusResponse.newBuilder()
                                .addContainersStatuses(ContainerStatus.newBuilder().setId(P))
                                .build()),
                row(
                        "ListPodSandboxStats",
                        null,
                        null,
                        ListPodSandboxStatsResponse.newBuilder().addStats(podStats(B)).build(),
                        ListPodSandboxStatsResponse.newBuilder().addStats(podStats(P)).build()),
                row(
                        "ListPodSandboxMetrics",
                        null,
                        null,
                        ListPodSandboxMetricsResponse.newBuilder()
                                .addPodMetrics(
                                        PodSandboxMetrics.newBuilder()
                                                .setPodSandboxId(POD)
                                                .addContainerMetrics(
                                                        ContainerMetrics.newBuilder()
                                                                .setContainerId(B)))
                                .build(),
                        ListPodSandboxMetricsResponse.newBuilder()
                                .addPodMetrics(
                                        PodSandboxMetrics.newBuilder()
                                                .setPodSandboxId(POD)
                                                .addContainerMetrics(
                                                        ContainerMetrics.newBuilder()
                                                                .setContainerId(P)))
                                .build()),
                row(
                        "StreamContainers",
                        StreamContainersRequest.newBuilder()
                                .setFilter(ContainerFilter.newBuilder().setId(P))
                                .build(),
                        StreamContainersRequest.newBuilder()
                                .setFilter(ContainerFilter.newBuilder().setId(B))
                                .build(),
                        StreamContainersResponse.newBuilder()
                                .addContainers(container(B, true))
                                .build(),
                        StreamContainersResponse.newBuilder()
                                .addContainers(container(P, false))
                                .build()),
                row(
                        "StreamContainerStats",
                        null,
                        null,
                        StreamContainerStatsResponse.newBuilder()
                                .addContainerStats(stats(B))
                                .build(),
                        StreamContainerStatsResponse.newBuilder()
                                .addContainerStats(stats(P))
                                .build()));
    }

    private static Arguments row(
            String method, Message req, Message backendReq, Message resp, Message clientResp) {
        return Arguments.of(method, req, backendReq, resp, clientResp);
    }

    private static ContainerStatusResponse statusResponse(String id, boolean annotated) {
        ContainerStatus.Builder s = ContainerStatus.newBuilder().setId(id).putAnnotations("a", "1");
        if (annotated) {
            s.putAnnotations(ContainerIds.ANNOTATION, P);
        }
        return ContainerStatusResponse.newBuilder().setStatus(s).putInfo("info", "{}").build();
    }

    private static Container container(String id, boolean annotated) {
        Container.Builder c = Container.newBuilder().setId(id).setPodSandboxId(POD);
        if (annotated) {
            c.putAnnotations(ContainerIds.ANNOTATION, P);
        }
        return c.build();
    }

    private static ContainerStats stats(String id) {
        return ContainerStats.newBuilder()
                .setAttributes(ContainerAttributes.newBuilder().setId(id))
                .build();
    }

    private static PodSandboxStats podStats(String id) {
        return PodSandboxStats.newBuilder()
                .setLinux(LinuxPodSandboxStats.newBuilder().addContainers(stats(id)))
                .build();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("methods")
    void translatesEveryMethodThatCarriesAContainerId(
            String method, Message req, Message backendReq, Message resp, Message clientResp) {
        ContainerIds ids = ids();
        assertThat(ProxyHooks.CARRYING_IDS).contains(method);
        if (req != null) {
            assertThat(ids.requestToBackend(req)).isEqualTo(backendReq);
            // a request by the runtime's id (or an id the proxy does not know) goes on as it is
            assertThat(ids.requestToBackend(backendReq)).isSameAs(backendReq);
        }
        if (resp != null) {
            assertThat(ids.responseToClient(resp)).isEqualTo(clientResp);
            assertThat(new ContainerIds().responseToClient(resp)).isSameAs(resp);
        }
    }

    @Test
    void theMethodsThatCarryNoContainerIdAreNotTranslated() {
        assertThat(ProxyHooks.CARRYING_IDS)
                .doesNotContain(
                        "Version",
                        "Status",
                        "RunPodSandbox",
                        "StopPodSandbox",
                        "RemovePodSandbox",
                        "ListPodSandbox",
                        "PortForward",
                        "ListMetricDescriptors",
                        "UpdateRuntimeConfig",
                        "RuntimeConfig");
        assertThat(ProxyHooks.CARRYING_IDS).isSubsetOf(allMethodNames());
    }

    /**
     * Every string field of every RuntimeService message set to the runtime's id: after
     * translation exactly the fields that hold a container's id carry the proxy's id (any depth),
     * and no other (a pod's id, an image's id, a name) has changed.
     */
    @Test
    void everyContainerIdFieldOfTheProtoAndNoOtherIsTranslated() {
        everyContainerIdFieldAndNoOtherIsTranslated(
                RuntimeServiceGrpc.getServiceDescriptor().getMethods(), true);
    }

    /** The same for {@code runtime.v1alpha2}, which goes through the v1 counterparts. */
    @Test
    void everyContainerIdFieldOfTheV1alpha2ProtoAndNoOtherIsTranslated() {
        everyContainerIdFieldAndNoOtherIsTranslated(
                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.getServiceDescriptor().getMethods(),
                false);
    }

    private static void everyContainerIdFieldAndNoOtherIsTranslated(
            java.util.Collection<MethodDescriptor<?, ?>> methods, boolean v1) {
        ContainerIds ids = ids();
        List<String> translated = new ArrayList<>();
        for (MethodDescriptor<?, ?> m : methods) {
            boolean carries = false;
            for (MethodDescriptor.Marshaller<?> marshaller :
                    List.of(m.getRequestMarshaller(), m.getResponseMarshaller())) {
                Message proto =
                        (Message)
                                ((MethodDescriptor.PrototypeMarshaller<?>) marshaller)
                                        .getMessagePrototype();
                Message parsed = parse(proto, fill(proto.getDescriptorForType(), 0));
                Message toClient = ids.responseToClient(parsed);
                Message toBackend = ids.requestToBackend(toClient);
                assertThat(new ContainerIds().requestToBackend(parsed)).isSameAs(parsed);
                check(toClient, "", translated);
                boolean changed = toClient != parsed;
                assertThat(toClient.getClass()).isSameAs(proto.getClass());
                assertThat(toBackend).as("back to the runtime's ids").isEqualTo(parsed);
                assertThat(carries(proto.getDescriptorForType(), new java.util.HashSet<>()))
                        .as(proto.getDescriptorForType().getName())
                        .isEqualTo(changed);
                if (v1 || changed) {
                    // a v1alpha2 type may lack the field its v1 counterpart has (translated as
                    // the identity then)
                    assertThat(ContainerIds.carriesContainerIds(proto))
                            .as(proto.getDescriptorForType().getName())
                            .isEqualTo(changed);
                }
                carries |= changed;
            }
            if (v1) {
                assertThat(ProxyHooks.CARRYING_IDS.contains(m.getBareMethodName()))
                        .as(m.getBareMethodName())
                        .isEqualTo(carries);
            } else if (carries) {
                assertThat(ProxyHooks.CARRYING_IDS).contains(m.getBareMethodName());
            }
        }
        assertThat(translated)
                .contains(
                        "Container.id",
                        "ContainerStatus.id",
                        "ContainerAttributes.id",
                        "ContainerFilter.id",
                        "ContainerStatsFilter.id");
        if (v1) {
            assertThat(translated)
                    .contains(
                            "CheckpointPodRequest.container_ids", "RestoredContainer.container_id");
        }
    }

    private static Message parse(Message proto, Message dynamic) {
        try {
            return proto.getParserForType().parseFrom(dynamic.toByteString());
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            throw new AssertionError(e);
        }
    }

    /** A message with every string field (at every depth) set to the runtime's id. */
    private static Message fill(Descriptor d, int depth) {
        DynamicMessage.Builder b = DynamicMessage.newBuilder(d);
        for (FieldDescriptor f : d.getFields()) {
            Object v =
                    switch (f.getJavaType()) {
                        case STRING -> B;
                        case MESSAGE -> depth < 8 ? fill(f.getMessageType(), depth + 1) : null;
                        default -> null;
                    };
            if (v == null) {
                continue;
            }
            if (f.isRepeated()) {
                b.addRepeatedField(f, v);
            } else {
                b.setField(f, v);
            }
        }
        return b.build();
    }

    /** Every string field is the proxy's id where it holds a container's id, else unchanged. */
    private static void check(Message m, String path, List<String> translated) {
        Descriptor d = m.getDescriptorForType();
        for (FieldDescriptor f : d.getFields()) {
            List<Object> values = new ArrayList<>();
            if (f.isRepeated()) {
                for (int i = 0; i < m.getRepeatedFieldCount(f); i++) {
                    values.add(m.getRepeatedField(f, i));
                }
            } else if (m.hasField(f)) {
                values.add(m.getField(f));
            }
            for (Object v : values) {
                if (v instanceof String s) {
                    boolean id = isId(d, f);
                    assertThat(s).as(path + d.getName() + "." + f.getName()).isEqualTo(id ? P : B);
                    if (id) {
                        translated.add(d.getName() + "." + f.getName());
                    }
                } else if (v instanceof Message child) {
                    check(child, path + d.getName() + "." + f.getName() + " > ", translated);
                }
            }
        }
    }

    private static List<String> allMethodNames() {
        return RuntimeServiceGrpc.getServiceDescriptor().getMethods().stream()
                .map(MethodDescriptor::getBareMethodName)
                .toList();
    }

    @Test
    void unknownIdsPassUnchangedAndTheSameMessageGoesOn() {
        ContainerIds ids = ids();
        StartContainerRequest other =
                StartContainerRequest.newBuilder().setContainerId("x").build();
        assertThat(ids.requestToBackend(other)).isSameAs(other);
        ListContainersResponse list =
                ListContainersResponse.newBuilder().addContainers(container("y", false)).build();
        assertThat(ids.responseToClient(list)).isSameAs(list);
        GetEventsRequest events = GetEventsRequest.getDefaultInstance();
        assertThat(ids.requestToBackend(events)).isSameAs(events);
    }

    @Test
    void aUniquePrefixOfTheProxysIdResolvesAsContainerdResolvesShortIds() {
        ContainerIds ids = ids();
        assertThat(ids.toBackend(P.substring(0, 12))).isEqualTo(B);
        ids.put("a".repeat(12) + "f".repeat(52), "d".repeat(64));
        assertThat(ids.toBackend(P.substring(0, 12))).isEqualTo(P.substring(0, 12)); // ambiguous
        assertThat(ids.toBackend(P.substring(0, 13))).isEqualTo(B);
        assertThat(ids.toBackend("")).isEmpty();
    }

    @Test
    void removedContainersAreForgottenBothWays() {
        ContainerIds ids = ids();
        ids.remove(P);
        assertThat(ids.toBackend(P)).isEqualTo(P);
        assertThat(ids.toClient(B)).isEqualTo(B);
        assertThat(ids.isEmpty()).isTrue();
    }

    @Test
    void newIdsAreLikeContainerdsAndDistinct() {
        String a = ContainerIds.newId();
        String b = ContainerIds.newId();
        assertThat(a).matches("[0-9a-f]{64}");
        assertThat(ContainerIds.wellFormed(a)).isTrue();
        assertThat(ContainerIds.wellFormed("cri4j-creating-1")).isFalse();
        assertThat(a).isNotEqualTo(b);
    }

    @Test
    void anEventDuringTheCreationTeachesThePairFromTheAnnotation() {
        ContainerIds ids = new ContainerIds();
        ContainerEventResponse created =
                ContainerEventResponse.newBuilder()
                        .setContainerId(B)
                        .addContainersStatuses(
                                ContainerStatus.newBuilder()
                                        .setId(B)
                                        .putAnnotations(ContainerIds.ANNOTATION, P))
                        .build();
        // not while no creation of P is in progress: an annotation alone teaches nothing
        assertThat(ids.responseToClient(created)).isSameAs(created);
        ids.creating(P);
        assertThat(ids.responseToClient(created))
                .isEqualTo(
                        ContainerEventResponse.newBuilder()
                                .setContainerId(P)
                                .addContainersStatuses(ContainerStatus.newBuilder().setId(P))
                                .build());
        ids.createdOrFailed(P);
        assertThat(ids.toBackend(P)).isEqualTo(B);
    }
}

package io.cri4j.proxy.internal.hooks;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.cri4j.cri.v1.Container;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandbox;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.PodSandboxStatusResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The proxy's record of the pods and containers it knows, as they went to the runtime (hooks'
 * changes included): what it builds NRI's view from when a request carries only an id, and what
 * hooks get in {@code Synchronize}. Written only after the backend call succeeded; rebuilt from
 * the backend at start (ListPodSandbox, ListContainers, and the configs in their verbose status,
 * which containerd keeps as it received them).
 */
public final class CheckpointStore {
    private static final Logger LOG = LoggerFactory.getLogger(CheckpointStore.class);

    /** A pod: its id, its config as it went to the runtime, its runtime handler. */
    public record Pod(String id, PodSandboxConfig config, String runtimeHandler) {}

    /** A container: its id, its pod, its config as it went to the runtime, its state. */
    public record Ctr(String id, String podId, ContainerConfig config, ContainerState state) {
        /** A copy in {@code s}. */
        public Ctr withState(ContainerState s) {
            return new Ctr(id, podId, config, s);
        }

        /** A copy with these resources. */
        public Ctr withResources(LinuxContainerResources r) {
            ContainerConfig.Builder b = config.toBuilder();
            b.getLinuxBuilder().setResources(r);
            return new Ctr(id, podId, b.build(), state);
        }
    }

    private final Map<String, Pod> pods = new ConcurrentHashMap<>();
    private final Map<String, Ctr> containers = new ConcurrentHashMap<>();
    private final ContainerIds ids = new ContainerIds();

    /**
     * The proxy's container ids and the runtime's; the store's containers are keyed by the
     * proxy's id.
     */
    public ContainerIds ids() {
        return ids;
    }

    public void putPod(Pod pod) {
        pods.put(pod.id(), pod);
    }

    public void putContainer(Ctr c) {
        containers.put(c.id(), c);
    }

    public Optional<Pod> pod(String id) {
        return Optional.ofNullable(pods.get(id));
    }

    public Optional<Ctr> container(String id) {
        return Optional.ofNullable(containers.get(id));
    }

    /** Removes a pod and its containers (and their ids). */
    public void removePod(String id) {
        pods.remove(id);
        containers
                .values()
                .removeIf(
                        c -> {
                            if (c.podId().equals(id)) {
                                ids.remove(c.id());
                                return true;
                            }
                            return false;
                        });
    }

    /** Removes a container and its id. */
    public void removeContainer(String id) {
        containers.remove(id);
        ids.remove(id);
    }

    /** The pods, by id. */
    public List<Pod> pods() {
        List<Pod> out = new ArrayList<>(pods.values());
        out.sort(Comparator.comparing(Pod::id));
        return out;
    }

    /** The containers, by id. */
    public List<Ctr> containers() {
        List<Ctr> out = new ArrayList<>(containers.values());
        out.sort(Comparator.comparing(Ctr::id));
        return out;
    }

    public int podCount() {
        return pods.size();
    }

    public int containerCount() {
        return containers.size();
    }

    /**
     * Rebuilds the store from the backend: every pod from ListPodSandbox, every container from
     * ListContainers, each with the config from its verbose status ({@code info["info"].config},
     * containerd's layout); where that is missing, what the list tells (metadata, labels,
     * annotations, image) and a container's resources from ContainerStatus. A container with the
     * annotation {@link ContainerIds#ANNOTATION} is recorded under the proxy's id it names (the
     * annotation left out of its config, as hooks saw it), others under the runtime's. Entries
     * are replaced, not cleared, so entries written concurrently stay.
     */
    public void rebuild(RuntimeServiceGrpc.RuntimeServiceBlockingStub backend) {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub s =
                backend.withDeadlineAfter(10, TimeUnit.SECONDS);
        List<PodSandbox> podList =
                s.listPodSandbox(ListPodSandboxRequest.getDefaultInstance()).getItemsList();
        for (PodSandbox p : podList) {
            PodSandboxConfig.Builder config = PodSandboxConfig.newBuilder();
            JsonObject verbose = null;
            try {
                PodSandboxStatusResponse st =
                        backend.withDeadlineAfter(5, TimeUnit.SECONDS)
                                .podSandboxStatus(
                                        PodSandboxStatusRequest.newBuilder()
                                                .setPodSandboxId(p.getId())
                                                .setVerbose(true)
                                                .build());
                verbose = verboseConfig(st.getInfoMap());
            } catch (RuntimeException e) {
                LOG.warn("rebuild: no status for pod {}: {}", p.getId(), e.getMessage());
            }
            if (verbose != null) {
                merge(verbose, config);
            } else {
                config.setMetadata(p.getMetadata())
                        .putAllLabels(p.getLabelsMap())
                        .putAllAnnotations(p.getAnnotationsMap());
            }
            pods.put(p.getId(), new Pod(p.getId(), config.build(), p.getRuntimeHandler()));
        }
        List<Container> ctrList =
                s.listContainers(ListContainersRequest.getDefaultInstance()).getContainersList();
        for (Container c : ctrList) {
            String proxyId = c.getAnnotationsMap().get(ContainerIds.ANNOTATION);
            if (!ContainerIds.wellFormed(proxyId)) {
                proxyId = c.getId();
            }
            ids.put(proxyId, c.getId());
            ContainerConfig.Builder config = ContainerConfig.newBuilder();
            JsonObject verbose = null;
            LinuxContainerResources status = null;
            try {
                ContainerStatusResponse st =
                        backend.withDeadlineAfter(5, TimeUnit.SECONDS)
                                .containerStatus(
                                        ContainerStatusRequest.newBuilder()
                                                .setContainerId(c.getId())
                                                .setVerbose(true)
                                                .build());
                verbose = verboseConfig(st.getInfoMap());
                if (st.getStatus().hasResources() && st.getStatus().getResources().hasLinux()) {
                    status = st.getStatus().getResources().getLinux();
                }
            } catch (RuntimeException e) {
                LOG.warn("rebuild: no status for container {}: {}", c.getId(), e.getMessage());
            }
            if (verbose != null) {
                merge(verbose, config);
            } else {
                config.setMetadata(c.getMetadata())
                        .putAllLabels(c.getLabelsMap())
                        .putAllAnnotations(c.getAnnotationsMap())
                        .setImage(c.getImage());
                if (status != null) {
                    config.getLinuxBuilder().setResources(status);
                }
            }
            config.removeAnnotations(ContainerIds.ANNOTATION);
            containers.put(
                    proxyId, new Ctr(proxyId, c.getPodSandboxId(), config.build(), c.getState()));
        }
        LOG.info(
                "checkpoint store rebuilt from the backend: {} pods, {} containers",
                podList.size(),
                ctrList.size());
    }

    /** {@code info["info"].config} of a verbose status (containerd's layout), or null. */
    static JsonObject verboseConfig(Map<String, String> info) {
        String json = info.get("info");
        if (json == null) {
            return null;
        }
        try {
            JsonElement root = JsonParser.parseString(json);
            if (!root.isJsonObject()) {
                return null;
            }
            JsonElement config = root.getAsJsonObject().get("config");
            return config != null && config.isJsonObject() ? config.getAsJsonObject() : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * Merges Go's JSON encoding of a CRI message (field names as in the proto, enums as numbers,
     * a {@code KeyValue}'s value as a string) into {@code b}. Values of the wrong kind and unknown
     * fields are skipped.
     */
    static void merge(JsonObject json, Message.Builder b) {
        for (Map.Entry<String, JsonElement> e : json.entrySet()) {
            FieldDescriptor f = b.getDescriptorForType().findFieldByName(e.getKey());
            JsonElement v = e.getValue();
            if (f == null || v == null || v.isJsonNull()) {
                continue;
            }
            try {
                if (f.isMapField()) {
                    if (v.isJsonObject()) {
                        for (Map.Entry<String, JsonElement> kv : v.getAsJsonObject().entrySet()) {
                            Message.Builder entry = b.newBuilderForField(f);
                            FieldDescriptor key =
                                    entry.getDescriptorForType().findFieldByName("key");
                            FieldDescriptor value =
                                    entry.getDescriptorForType().findFieldByName("value");
                            entry.setField(key, kv.getKey());
                            Object val = value(value, kv.getValue(), entry);
                            if (val != null) {
                                entry.setField(value, val);
                                b.addRepeatedField(f, entry.build());
                            }
                        }
                    }
                } else if (f.isRepeated()) {
                    if (v.isJsonArray()) {
                        for (JsonElement item : v.getAsJsonArray()) {
                            Object val = value(f, item, b);
                            if (val != null) {
                                b.addRepeatedField(f, val);
                            }
                        }
                    }
                } else {
                    Object val = value(f, v, b);
                    if (val != null) {
                        b.setField(f, val);
                    }
                }
            } catch (RuntimeException skipped) {
                // a value of another kind than the field's: left out
            }
        }
    }

    private static Object value(FieldDescriptor f, JsonElement v, Message.Builder parent) {
        if (v == null || v.isJsonNull()) {
            return null;
        }
        return switch (f.getJavaType()) {
            case MESSAGE -> {
                if (!v.isJsonObject()) {
                    yield null;
                }
                Message.Builder m = parent.newBuilderForField(f);
                merge(v.getAsJsonObject(), m);
                yield m.build();
            }
            case ENUM ->
                    v.getAsJsonPrimitive().isNumber()
                            ? f.getEnumType().findValueByNumber(v.getAsInt())
                            : f.getEnumType().findValueByName(v.getAsString());
            case STRING -> v.getAsString();
            case BYTE_STRING -> ByteString.copyFromUtf8(v.getAsString());
            case BOOLEAN -> v.getAsBoolean();
            case INT -> v.getAsInt();
            case LONG -> v.getAsLong();
            case FLOAT -> v.getAsFloat();
            case DOUBLE -> v.getAsDouble();
        };
    }
}

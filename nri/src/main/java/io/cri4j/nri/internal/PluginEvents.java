package io.cri4j.nri.internal;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Api;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The dispatch table of the plugin service's per-event calls, for both roles, derived at class load from
 * NRI's generated descriptors (service {@code Plugin} of {@code nri.pkg.api.v1alpha1}): for each
 * {@link HookEvent}, the method of the same name, its request (the fields its input type has among
 * {@code pod}, {@code container}, {@code linux_resources} and {@code overhead_linux_resources}) and
 * its answer read into a {@link HookResult} (whichever of {@code adjust}, {@code update} and {@code
 * evict} its output type has). The host writes requests and reads answers with it; the plugin reads
 * requests and writes answers. Nothing here lists the events by hand: a method added to the proto
 * is in the table.
 */
public final class PluginEvents {

    /** The fields of the requests and answers that carry the event's objects and its results. */
    private static final String POD = "pod";

    private static final String CONTAINER = "container";
    private static final String RESOURCES = "linux_resources";
    private static final String OVERHEAD = "overhead_linux_resources";
    private static final String ADJUST = "adjust";
    private static final String UPDATE = "update";
    private static final String EVICT = "evict";

    /** What {@code StateChangeEvent} carries besides the event: an event with nothing else can go as one. */
    private static final Set<String> STATE_CHANGE_FIELDS = Set.of(POD, CONTAINER);

    private static final Map<HookEvent, Rpc> TABLE = table();

    private static final Map<String, Rpc> BY_METHOD = byMethod();

    private PluginEvents() {}

    /**
     * One call of the plugin service.
     *
     * @param event the event it carries
     * @param method the method's name
     * @param request the request's type, as its default instance
     * @param answer the answer's type, as its default instance
     * @param stateChange whether NRI v0.8 sends the event as {@code StateChange}: it has no
     *     answer and its request carries nothing but the pod and the container
     */
    public record Rpc(
            HookEvent event, String method, Message request, Message answer, boolean stateChange) {

        /** The request with the fields its type has set from the arguments that are not null. */
        public Message request(
                PodSandbox pod,
                Container container,
                LinuxResources overhead,
                LinuxResources resources) {
            Message.Builder b = request.newBuilderForType();
            set(b, POD, pod);
            set(b, CONTAINER, container);
            set(b, OVERHEAD, overhead);
            set(b, RESOURCES, resources);
            return b.build();
        }

        /** A request of this call read from its bytes. */
        public Message parseRequest(byte[] bytes) throws InvalidProtocolBufferException {
            return request.getParserForType().parseFrom(bytes);
        }

        /** The request's pod, or null when its type has none. */
        public PodSandbox pod(Message request) {
            return (PodSandbox) get(request, POD);
        }

        /** The request's container, or null when its type has none. */
        public Container container(Message request) {
            return (Container) get(request, CONTAINER);
        }

        /** The request's resources, or null when its type has none. */
        public LinuxResources resources(Message request) {
            return (LinuxResources) get(request, RESOURCES);
        }

        /** The request's pod overhead resources, or null when its type has none. */
        public LinuxResources overhead(Message request) {
            return (LinuxResources) get(request, OVERHEAD);
        }

        /** Whether the answer's type carries a container adjustment. */
        public boolean answersAdjustment() {
            return answer.getDescriptorForType().findFieldByName(ADJUST) != null;
        }

        /** Whether the answer's type carries evictions. */
        public boolean answersEvictions() {
            return answer.getDescriptorForType().findFieldByName(EVICT) != null;
        }

        /**
         * A hook's result as this call's answer: the adjustment (when not empty), updates and
         * evictions, each where the answer's type has the field; what it has no field for is left
         * out.
         */
        public Message answer(HookResult h) {
            Message.Builder b = answer.newBuilderForType();
            Descriptor d = b.getDescriptorForType();
            FieldDescriptor adjust = d.findFieldByName(ADJUST);
            FieldDescriptor update = d.findFieldByName(UPDATE);
            FieldDescriptor evict = d.findFieldByName(EVICT);
            if (adjust != null
                    && !h.adjustment().equals(ContainerAdjustment.getDefaultInstance())) {
                b.setField(adjust, h.adjustment());
            }
            if (update != null) {
                h.updates().forEach(u -> b.addRepeatedField(update, u));
            }
            if (evict != null) {
                h.evictions().forEach(e -> b.addRepeatedField(evict, e));
            }
            return b.build();
        }

        private static Message get(Message m, String field) {
            FieldDescriptor f = m.getDescriptorForType().findFieldByName(field);
            return f == null ? null : (Message) m.getField(f);
        }

        /** The answer as a hook's result; an empty answer is an empty result. */
        @SuppressWarnings("unchecked")
        public HookResult result(byte[] bytes) throws InvalidProtocolBufferException {
            Message r = answer.getParserForType().parseFrom(bytes);
            Descriptor d = r.getDescriptorForType();
            FieldDescriptor adjust = d.findFieldByName(ADJUST);
            FieldDescriptor update = d.findFieldByName(UPDATE);
            FieldDescriptor evict = d.findFieldByName(EVICT);
            return new HookResult(
                    adjust != null && r.hasField(adjust)
                            ? (ContainerAdjustment) r.getField(adjust)
                            : ContainerAdjustment.getDefaultInstance(),
                    update != null ? (List<ContainerUpdate>) r.getField(update) : List.of(),
                    evict != null ? (List<ContainerEviction>) r.getField(evict) : List.of());
        }

        private static void set(Message.Builder b, String field, Message value) {
            FieldDescriptor f = b.getDescriptorForType().findFieldByName(field);
            if (f != null && value != null) {
                b.setField(f, value);
            }
        }
    }

    /**
     * Builds the table now (it is built once, when this class initialises), so that the first
     * event does not spend the runtime's deadline on reading the descriptors and finding the
     * generated classes: the host calls this as it starts, a plugin once its registration is
     * answered (the registration's calls do not use the table).
     */
    public static void load() {
        // class initialisation has built TABLE and BY_METHOD by the time this runs
    }

    /** The call of {@code event}. */
    public static Rpc of(HookEvent event) {
        Rpc rpc = TABLE.get(event);
        if (rpc == null) {
            throw new IllegalArgumentException(event + " is not a method of NRI's plugin service");
        }
        return rpc;
    }

    /** The call of the method named {@code method}, or null when it is not a per-event call. */
    public static Rpc ofMethod(String method) {
        return BY_METHOD.get(method);
    }

    private static Map<String, Rpc> byMethod() {
        Map<String, Rpc> out = new HashMap<>();
        TABLE.values().forEach(r -> out.put(r.method(), r));
        return Map.copyOf(out);
    }

    private static Map<HookEvent, Rpc> table() {
        ServiceDescriptor service = Api.getDescriptor().findServiceByName("Plugin");
        Map<HookEvent, Rpc> out = new EnumMap<>(HookEvent.class);
        for (HookEvent e : HookEvent.values()) {
            MethodDescriptor m = service.findMethodByName(e.displayName());
            if (m == null) {
                continue; // AdjustPodSandbox: no NRI method
            }
            boolean stateChange =
                    m.getOutputType().getFields().isEmpty()
                            && m.getInputType().getFields().stream()
                                    .allMatch(f -> STATE_CHANGE_FIELDS.contains(f.getName()));
            out.put(
                    e,
                    new Rpc(
                            e,
                            m.getName(),
                            defaultInstance(m.getInputType()),
                            defaultInstance(m.getOutputType()),
                            stateChange));
        }
        return out;
    }

    /** The generated class's default instance of {@code type}, found by the file's Java package. */
    private static Message defaultInstance(Descriptor type) {
        String name = type.getFile().getOptions().getJavaPackage() + "." + type.getName();
        try {
            return (Message)
                    Class.forName(name, true, Api.class.getClassLoader())
                            .getMethod("getDefaultInstance")
                            .invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(
                    "no generated class " + name + " for " + type.getFullName(), e);
        }
    }
}

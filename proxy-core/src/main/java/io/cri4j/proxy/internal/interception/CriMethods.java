package io.cri4j.proxy.internal.interception;

import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.MethodDescriptor.MethodType;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * The methods of CRI's {@code runtime.v1} RuntimeService and ImageService, written out: name, type
 * and the simple names of the request and response messages. {@link #lazy()} makes descriptors from
 * it whose marshallers load a method's message classes when a call of that method is first decoded:
 * grpc-java's generated service descriptors load and initialise every request and response class of
 * every method when they are built, most of which a proxy never relays. CriMethodsTest checks the
 * table against the generated descriptors.
 */
public final class CriMethods {
    private CriMethods() {}

    private static final String RUNTIME = RuntimeServiceGrpc.SERVICE_NAME;
    private static final String IMAGE = ImageServiceGrpc.SERVICE_NAME;

    /** One method: its service's full name, bare name, type, request and response simple names. */
    public record Method(
            String service, String name, MethodType type, String request, String response) {
        /** The method's full name, {@code service/name}. */
        public String fullName() {
            return MethodDescriptor.generateFullMethodName(service, name);
        }
    }

    /** Every RuntimeService method, then every ImageService method. */
    public static final List<Method> V1 =
            List.of(
                    unary("Attach"),
                    unary("CheckpointContainer"),
                    unary("CheckpointPod"),
                    unary("ContainerStats"),
                    unary("ContainerStatus"),
                    unary("CreateContainer"),
                    unary("Exec"),
                    unary("ExecSync"),
                    new Method(
                            RUNTIME,
                            "GetContainerEvents",
                            MethodType.SERVER_STREAMING,
                            "GetEventsRequest",
                            "ContainerEventResponse"),
                    unary("ListContainerStats"),
                    unary("ListContainers"),
                    unary("ListMetricDescriptors"),
                    unary("ListPodSandbox"),
                    unary("ListPodSandboxMetrics"),
                    unary("ListPodSandboxStats"),
                    unary("PodSandboxStats"),
                    unary("PodSandboxStatus"),
                    unary("PortForward"),
                    unary("RemoveContainer"),
                    unary("RemovePodSandbox"),
                    unary("ReopenContainerLog"),
                    unary("RestorePod"),
                    unary("RunPodSandbox"),
                    unary("RuntimeConfig"),
                    unary("StartContainer"),
                    unary("Status"),
                    unary("StopContainer"),
                    unary("StopPodSandbox"),
                    streaming(RUNTIME, "StreamContainerStats"),
                    streaming(RUNTIME, "StreamContainers"),
                    streaming(RUNTIME, "StreamPodSandboxMetrics"),
                    streaming(RUNTIME, "StreamPodSandboxStats"),
                    streaming(RUNTIME, "StreamPodSandboxes"),
                    unary("UpdateContainerResources"),
                    unary("UpdatePodSandboxResources"),
                    unary("UpdateRuntimeConfig"),
                    unary("Version"),
                    image("ImageFsInfo"),
                    image("ImageStatus"),
                    image("ListImages"),
                    image("PullImage"),
                    image("RemoveImage"),
                    streaming(IMAGE, "StreamImages"));

    private static Method unary(String name) {
        return new Method(RUNTIME, name, MethodType.UNARY, name + "Request", name + "Response");
    }

    private static Method image(String name) {
        return new Method(IMAGE, name, MethodType.UNARY, name + "Request", name + "Response");
    }

    private static Method streaming(String service, String name) {
        return new Method(
                service, name, MethodType.SERVER_STREAMING, name + "Request", name + "Response");
    }

    /**
     * Descriptors of every method of {@link #V1}, equal to the generated ones in name and type,
     * whose marshallers load the method's message classes on first use.
     */
    public static List<MethodDescriptor<?, ?>> lazy() {
        List<MethodDescriptor<?, ?>> out = new ArrayList<>(V1.size());
        for (Method m : V1) {
            out.add(
                    MethodDescriptor.newBuilder(new Lazy(m.name(), true), new Lazy(m.name(), false))
                            .setType(m.type())
                            .setFullMethodName(m.fullName())
                            .build());
        }
        return out;
    }

    /** The generated descriptors of every method of {@link #V1}, in its order. */
    public static List<MethodDescriptor<?, ?>> generated() {
        List<MethodDescriptor<?, ?>> out = new ArrayList<>(V1.size());
        for (Method m : V1) {
            out.add(generated(m.name()));
        }
        return out;
    }

    /** A method's marshaller, the generated one's once first used. */
    private static final class Lazy implements MethodDescriptor.PrototypeMarshaller<Object> {
        private final String method;
        private final boolean request;
        private volatile MethodDescriptor.PrototypeMarshaller<Object> target;

        Lazy(String method, boolean request) {
            this.method = method;
            this.request = request;
        }

        @SuppressWarnings("unchecked")
        private MethodDescriptor.PrototypeMarshaller<Object> target() {
            MethodDescriptor.PrototypeMarshaller<Object> t = target;
            if (t == null) {
                MethodDescriptor<?, ?> g = generated(method);
                t =
                        (MethodDescriptor.PrototypeMarshaller<Object>)
                                (request ? g.getRequestMarshaller() : g.getResponseMarshaller());
                target = t;
            }
            return t;
        }

        @Override
        public Object getMessagePrototype() {
            return target().getMessagePrototype();
        }

        @Override
        public Class<Object> getMessageClass() {
            return target().getMessageClass();
        }

        @Override
        public InputStream stream(Object value) {
            return target().stream(value);
        }

        @Override
        public Object parse(InputStream stream) {
            return target().parse(stream);
        }
    }

    /** The generated descriptor of the method {@code name} (unique across both services). */
    private static MethodDescriptor<?, ?> generated(String name) {
        return switch (name) {
            case "Attach" -> RuntimeServiceGrpc.getAttachMethod();
            case "CheckpointContainer" -> RuntimeServiceGrpc.getCheckpointContainerMethod();
            case "CheckpointPod" -> RuntimeServiceGrpc.getCheckpointPodMethod();
            case "ContainerStats" -> RuntimeServiceGrpc.getContainerStatsMethod();
            case "ContainerStatus" -> RuntimeServiceGrpc.getContainerStatusMethod();
            case "CreateContainer" -> RuntimeServiceGrpc.getCreateContainerMethod();
            case "Exec" -> RuntimeServiceGrpc.getExecMethod();
            case "ExecSync" -> RuntimeServiceGrpc.getExecSyncMethod();
            case "GetContainerEvents" -> RuntimeServiceGrpc.getGetContainerEventsMethod();
            case "ListContainerStats" -> RuntimeServiceGrpc.getListContainerStatsMethod();
            case "ListContainers" -> RuntimeServiceGrpc.getListContainersMethod();
            case "ListMetricDescriptors" -> RuntimeServiceGrpc.getListMetricDescriptorsMethod();
            case "ListPodSandbox" -> RuntimeServiceGrpc.getListPodSandboxMethod();
            case "ListPodSandboxMetrics" -> RuntimeServiceGrpc.getListPodSandboxMetricsMethod();
            case "ListPodSandboxStats" -> RuntimeServiceGrpc.getListPodSandboxStatsMethod();
            case "PodSandboxStats" -> RuntimeServiceGrpc.getPodSandboxStatsMethod();
            case "PodSandboxStatus" -> RuntimeServiceGrpc.getPodSandboxStatusMethod();
            case "PortForward" -> RuntimeServiceGrpc.getPortForwardMethod();
            case "RemoveContainer" -> RuntimeServiceGrpc.getRemoveContainerMethod();
            case "RemovePodSandbox" -> RuntimeServiceGrpc.getRemovePodSandboxMethod();
            case "ReopenContainerLog" -> RuntimeServiceGrpc.getReopenContainerLogMethod();
            case "RestorePod" -> RuntimeServiceGrpc.getRestorePodMethod();
            case "RunPodSandbox" -> RuntimeServiceGrpc.getRunPodSandboxMethod();
            case "RuntimeConfig" -> RuntimeServiceGrpc.getRuntimeConfigMethod();
            case "StartContainer" -> RuntimeServiceGrpc.getStartContainerMethod();
            case "Status" -> RuntimeServiceGrpc.getStatusMethod();
            case "StopContainer" -> RuntimeServiceGrpc.getStopContainerMethod();
            case "StopPodSandbox" -> RuntimeServiceGrpc.getStopPodSandboxMethod();
            case "StreamContainerStats" -> RuntimeServiceGrpc.getStreamContainerStatsMethod();
            case "StreamContainers" -> RuntimeServiceGrpc.getStreamContainersMethod();
            case "StreamPodSandboxMetrics" -> RuntimeServiceGrpc.getStreamPodSandboxMetricsMethod();
            case "StreamPodSandboxStats" -> RuntimeServiceGrpc.getStreamPodSandboxStatsMethod();
            case "StreamPodSandboxes" -> RuntimeServiceGrpc.getStreamPodSandboxesMethod();
            case "UpdateContainerResources" ->
                    RuntimeServiceGrpc.getUpdateContainerResourcesMethod();
            case "UpdatePodSandboxResources" ->
                    RuntimeServiceGrpc.getUpdatePodSandboxResourcesMethod();
            case "UpdateRuntimeConfig" -> RuntimeServiceGrpc.getUpdateRuntimeConfigMethod();
            case "Version" -> RuntimeServiceGrpc.getVersionMethod();
            case "ImageFsInfo" -> ImageServiceGrpc.getImageFsInfoMethod();
            case "ImageStatus" -> ImageServiceGrpc.getImageStatusMethod();
            case "ListImages" -> ImageServiceGrpc.getListImagesMethod();
            case "PullImage" -> ImageServiceGrpc.getPullImageMethod();
            case "RemoveImage" -> ImageServiceGrpc.getRemoveImageMethod();
            case "StreamImages" -> ImageServiceGrpc.getStreamImagesMethod();
            default -> throw new IllegalArgumentException("not a CRI v1 method: " + name);
        };
    }
}

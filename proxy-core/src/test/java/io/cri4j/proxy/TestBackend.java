package io.cri4j.proxy;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.Container;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerEventType;
import io.cri4j.cri.v1.ContainerStatus;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListContainersResponse;
import io.cri4j.cri.v1.ListImagesRequest;
import io.cri4j.cri.v1.ListImagesResponse;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.ListPodSandboxResponse;
import io.cri4j.cri.v1.PodSandbox;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StartContainerResponse;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesResponse;
import io.cri4j.cri.v1.UpdatePodSandboxResourcesRequest;
import io.cri4j.cri.v1.UpdatePodSandboxResourcesResponse;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small hand-written CRI runtime on a unix socket, the test seam behind the proxy: it records
 * what it received and keeps pods and containers in memory. Optionally serves v1alpha2 Version
 * and RunPodSandbox, and an unknown service {@code test.Echo/Echo} that echoes raw bytes.
 */
final class TestBackend implements AutoCloseable {
    /** Passes message bytes through unchanged. */
    static final MethodDescriptor.Marshaller<byte[]> BYTES =
            new MethodDescriptor.Marshaller<>() {
                @Override
                public java.io.InputStream stream(byte[] value) {
                    return new java.io.ByteArrayInputStream(value);
                }

                @Override
                public byte[] parse(java.io.InputStream stream) {
                    try {
                        return stream.readAllBytes();
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
            };

    static final Metadata.Key<String> TEST_HEADER =
            Metadata.Key.of("x-cri4j-test", Metadata.ASCII_STRING_MARSHALLER);
    private static final Context.Key<Metadata> HEADERS = Context.key("headers");

    final Path socket;
    final boolean v1alpha2;
    final List<Object> received = new CopyOnWriteArrayList<>();

    /** When set, ListContainers answers every container whatever its filter asks for. */
    volatile boolean ignoreListFilter;

    final List<String> headerValues = new CopyOnWriteArrayList<>();
    final AtomicInteger versionCalls = new AtomicInteger();

    /** Connections the backend accepted (the proxy's backend legs). */
    final AtomicInteger connections = new AtomicInteger();

    /** When set, Version answers only once it is counted down (entered counts each arrival). */
    volatile java.util.concurrent.CountDownLatch holdVersion;

    final java.util.concurrent.Semaphore versionEntered = new java.util.concurrent.Semaphore(0);
    final Map<String, PodSandbox> pods = new ConcurrentHashMap<>();
    final Map<String, Container> containers = new ConcurrentHashMap<>();
    final Map<String, io.cri4j.cri.v1.LinuxContainerResources> resources =
            new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();
    private CriServer server;

    TestBackend(Path socket, boolean v1alpha2) {
        this.socket = socket;
        this.v1alpha2 = v1alpha2;
    }

    TestBackend start() throws IOException {
        List<ServerServiceDefinition> defs = new ArrayList<>();
        ServerInterceptor capture =
                new ServerInterceptor() {
                    @Override
                    public <Q, R> ServerCall.Listener<Q> interceptCall(
                            ServerCall<Q, R> call, Metadata h, ServerCallHandler<Q, R> next) {
                        String v = h.get(TEST_HEADER);
                        if (v != null) {
                            headerValues.add(v);
                        }
                        return Contexts.interceptCall(
                                Context.current().withValue(HEADERS, h), call, h, next);
                    }
                };
        defs.add(ServerInterceptors.intercept(new Runtime().bindService(), capture));
        defs.add(new Images().bindService());
        if (v1alpha2) {
            defs.add(new RuntimeV1alpha2().bindService());
        }
        defs.add(
                ServerServiceDefinition.builder("test.Echo")
                        .addMethod(
                                MethodDescriptor.<byte[], byte[]>newBuilder()
                                        .setType(MethodDescriptor.MethodType.UNARY)
                                        .setFullMethodName("test.Echo/Echo")
                                        .setRequestMarshaller(BYTES)
                                        .setResponseMarshaller(BYTES)
                                        .build(),
                                ServerCalls.asyncUnaryCall(
                                        (byte[] req, StreamObserver<byte[]> obs) -> {
                                            byte[] out = new byte[req.length];
                                            for (int i = 0; i < req.length; i++) {
                                                out[i] = req[req.length - 1 - i];
                                            }
                                            obs.onNext(out);
                                            obs.onCompleted();
                                        }))
                        .build());
        CriServer.Builder sb =
                CriServer.builder(CriEndpoint.unix(socket))
                        .addTransportFilter(
                                new io.grpc.ServerTransportFilter() {
                                    @Override
                                    public io.grpc.Attributes transportReady(
                                            io.grpc.Attributes attributes) {
                                        connections.incrementAndGet();
                                        return attributes;
                                    }
                                });
        defs.forEach(sb::addService);
        server = sb.build().start();
        return this;
    }

    @SuppressWarnings("unchecked")
    <T> List<T> received(Class<T> type) {
        return received.stream().filter(type::isInstance).map(o -> (T) o).toList();
    }

    @Override
    public void close() throws InterruptedException {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    private final class Runtime extends RuntimeServiceGrpc.RuntimeServiceImplBase {
        @Override
        public void version(VersionRequest r, StreamObserver<VersionResponse> o) {
            versionCalls.incrementAndGet();
            received.add(r);
            versionEntered.release();
            java.util.concurrent.CountDownLatch hold = holdVersion;
            if (hold != null) {
                try {
                    hold.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            o.onNext(
                    VersionResponse.newBuilder()
                            .setVersion("0.1.0")
                            .setRuntimeName("test-backend")
                            .setRuntimeVersion("1.0")
                            .setRuntimeApiVersion("v1")
                            .build());
            o.onCompleted();
        }

        @Override
        public void runPodSandbox(RunPodSandboxRequest r, StreamObserver<RunPodSandboxResponse> o) {
            received.add(r);
            String id = "pod-" + ids.incrementAndGet();
            pods.put(
                    id,
                    PodSandbox.newBuilder()
                            .setId(id)
                            .setMetadata(r.getConfig().getMetadata())
                            .putAllLabels(r.getConfig().getLabelsMap())
                            .putAllAnnotations(r.getConfig().getAnnotationsMap())
                            .build());
            o.onNext(RunPodSandboxResponse.newBuilder().setPodSandboxId(id).build());
            o.onCompleted();
        }

        @Override
        public void createContainer(
                CreateContainerRequest r, StreamObserver<CreateContainerResponse> o) {
            received.add(r);
            String id = "ctr-" + ids.incrementAndGet();
            containers.put(
                    id,
                    Container.newBuilder()
                            .setId(id)
                            .setPodSandboxId(r.getPodSandboxId())
                            .setMetadata(r.getConfig().getMetadata())
                            .putAllAnnotations(r.getConfig().getAnnotationsMap())
                            .build());
            resources.put(id, r.getConfig().getLinux().getResources());
            o.onNext(CreateContainerResponse.newBuilder().setContainerId(id).build());
            o.onCompleted();
        }

        /** A known container's state, as its start and stop leave it. */
        private void state(String id, io.cri4j.cri.v1.ContainerState state) {
            containers.computeIfPresent(id, (k, c) -> c.toBuilder().setState(state).build());
        }

        @Override
        public void startContainer(
                StartContainerRequest r, StreamObserver<StartContainerResponse> o) {
            received.add(r);
            if (!containers.containsKey(r.getContainerId())) {
                // a message gRPC must percent-encode, and a trailer of the runtime's own
                Metadata trailers = new Metadata();
                trailers.put(TEST_HEADER, "missing " + r.getContainerId());
                o.onError(
                        io.grpc.Status.NOT_FOUND
                                .withDescription(
                                        "container "
                                                + r.getContainerId()
                                                + " not found (100% gone, ü)")
                                .asException(trailers));
                return;
            }
            state(r.getContainerId(), io.cri4j.cri.v1.ContainerState.CONTAINER_RUNNING);
            o.onNext(StartContainerResponse.getDefaultInstance());
            o.onCompleted();
        }

        @Override
        public void stopContainer(
                io.cri4j.cri.v1.StopContainerRequest r,
                StreamObserver<io.cri4j.cri.v1.StopContainerResponse> o) {
            received.add(r);
            state(r.getContainerId(), io.cri4j.cri.v1.ContainerState.CONTAINER_EXITED);
            o.onNext(io.cri4j.cri.v1.StopContainerResponse.getDefaultInstance());
            o.onCompleted();
        }

        @Override
        public void removeContainer(
                io.cri4j.cri.v1.RemoveContainerRequest r,
                StreamObserver<io.cri4j.cri.v1.RemoveContainerResponse> o) {
            received.add(r);
            containers.remove(r.getContainerId());
            o.onNext(io.cri4j.cri.v1.RemoveContainerResponse.getDefaultInstance());
            o.onCompleted();
        }

        @Override
        public void stopPodSandbox(
                io.cri4j.cri.v1.StopPodSandboxRequest r,
                StreamObserver<io.cri4j.cri.v1.StopPodSandboxResponse> o) {
            received.add(r);
            o.onNext(io.cri4j.cri.v1.StopPodSandboxResponse.getDefaultInstance());
            o.onCompleted();
        }

        @Override
        public void removePodSandbox(
                io.cri4j.cri.v1.RemovePodSandboxRequest r,
                StreamObserver<io.cri4j.cri.v1.RemovePodSandboxResponse> o) {
            received.add(r);
            pods.remove(r.getPodSandboxId());
            o.onNext(io.cri4j.cri.v1.RemovePodSandboxResponse.getDefaultInstance());
            o.onCompleted();
        }

        @Override
        public void updateContainerResources(
                UpdateContainerResourcesRequest r,
                StreamObserver<UpdateContainerResourcesResponse> o) {
            received.add(r);
            o.onNext(UpdateContainerResourcesResponse.getDefaultInstance());
            o.onCompleted();
        }

        @Override
        public void updatePodSandboxResources(
                UpdatePodSandboxResourcesRequest r,
                StreamObserver<UpdatePodSandboxResourcesResponse> o) {
            received.add(r);
            o.onNext(UpdatePodSandboxResourcesResponse.getDefaultInstance());
            o.onCompleted();
        }

        @Override
        public void listPodSandbox(
                ListPodSandboxRequest r, StreamObserver<ListPodSandboxResponse> o) {
            o.onNext(ListPodSandboxResponse.newBuilder().addAllItems(pods.values()).build());
            o.onCompleted();
        }

        @Override
        public void listContainers(
                ListContainersRequest r, StreamObserver<ListContainersResponse> o) {
            received.add(r);
            // the filter as containerd applies it: the proxy's exit poll asks for exited ones only
            io.cri4j.cri.v1.ContainerFilter f =
                    ignoreListFilter
                            ? io.cri4j.cri.v1.ContainerFilter.getDefaultInstance()
                            : r.getFilter();
            o.onNext(
                    ListContainersResponse.newBuilder()
                            .addAllContainers(
                                    containers.values().stream()
                                            .filter(
                                                    c ->
                                                            !f.hasState()
                                                                    || c.getState()
                                                                            == f.getState()
                                                                                    .getState())
                                            .filter(
                                                    c ->
                                                            f.getId().isEmpty()
                                                                    || c.getId().equals(f.getId()))
                                            .filter(
                                                    c ->
                                                            f.getPodSandboxId().isEmpty()
                                                                    || c.getPodSandboxId()
                                                                            .equals(
                                                                                    f
                                                                                            .getPodSandboxId()))
                                            .toList())
                            .build());
            o.onCompleted();
        }

        @Override
        public void containerStatus(
                ContainerStatusRequest r, StreamObserver<ContainerStatusResponse> o) {
            Container c = containers.get(r.getContainerId());
            if (c == null) {
                o.onError(io.grpc.Status.NOT_FOUND.asException());
                return;
            }
            ContainerStatus.Builder s =
                    ContainerStatus.newBuilder().setId(c.getId()).setMetadata(c.getMetadata());
            s.getResourcesBuilder()
                    .setLinux(
                            resources.getOrDefault(
                                    c.getId(),
                                    io.cri4j.cri.v1.LinuxContainerResources.getDefaultInstance()));
            o.onNext(ContainerStatusResponse.newBuilder().setStatus(s).build());
            o.onCompleted();
        }

        @Override
        public void getContainerEvents(
                GetEventsRequest r, StreamObserver<ContainerEventResponse> o) {
            received.add(r);
            for (int i = 0; i < 3; i++) {
                o.onNext(
                        ContainerEventResponse.newBuilder()
                                .setContainerId("ctr-event-" + i)
                                .setContainerEventType(ContainerEventType.CONTAINER_STARTED_EVENT)
                                .setCreatedAt(i)
                                .build());
            }
            o.onCompleted();
        }
    }

    private final class Images extends ImageServiceGrpc.ImageServiceImplBase {
        @Override
        public void listImages(ListImagesRequest r, StreamObserver<ListImagesResponse> o) {
            received.add(r);
            ListImagesResponse.Builder b = ListImagesResponse.newBuilder();
            b.addImagesBuilder().setId("sha256:abc").addRepoTags("test/busybox:1");
            o.onNext(b.build());
            o.onCompleted();
        }
    }

    private final class RuntimeV1alpha2
            extends io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.RuntimeServiceImplBase {
        @Override
        public void version(
                io.cri4j.cri.v1alpha2.VersionRequest r,
                StreamObserver<io.cri4j.cri.v1alpha2.VersionResponse> o) {
            received.add(r);
            o.onNext(
                    io.cri4j.cri.v1alpha2.VersionResponse.newBuilder()
                            .setRuntimeName("test-backend")
                            .setRuntimeApiVersion("v1alpha2")
                            .build());
            o.onCompleted();
        }

        @Override
        public void runPodSandbox(
                io.cri4j.cri.v1alpha2.RunPodSandboxRequest r,
                StreamObserver<io.cri4j.cri.v1alpha2.RunPodSandboxResponse> o) {
            received.add(r);
            o.onNext(
                    io.cri4j.cri.v1alpha2.RunPodSandboxResponse.newBuilder()
                            .setPodSandboxId("alpha-pod-" + ids.incrementAndGet())
                            .build());
            o.onCompleted();
        }
    }
}

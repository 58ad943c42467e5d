package io.cri4j.hook.cri;

import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.AttachResponse;
import io.cri4j.cri.v1.CheckpointContainerRequest;
import io.cri4j.cri.v1.CheckpointContainerResponse;
import io.cri4j.cri.v1.CheckpointPodRequest;
import io.cri4j.cri.v1.CheckpointPodResponse;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerStatsRequest;
import io.cri4j.cri.v1.ContainerStatsResponse;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ExecResponse;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ExecSyncResponse;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.ImageFsInfoRequest;
import io.cri4j.cri.v1.ImageFsInfoResponse;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.ImageStatusResponse;
import io.cri4j.cri.v1.ListContainerStatsRequest;
import io.cri4j.cri.v1.ListContainerStatsResponse;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListContainersResponse;
import io.cri4j.cri.v1.ListImagesRequest;
import io.cri4j.cri.v1.ListImagesResponse;
import io.cri4j.cri.v1.ListMetricDescriptorsRequest;
import io.cri4j.cri.v1.ListMetricDescriptorsResponse;
import io.cri4j.cri.v1.ListPodSandboxMetricsRequest;
import io.cri4j.cri.v1.ListPodSandboxMetricsResponse;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.ListPodSandboxResponse;
import io.cri4j.cri.v1.ListPodSandboxStatsRequest;
import io.cri4j.cri.v1.ListPodSandboxStatsResponse;
import io.cri4j.cri.v1.PodSandboxStatsRequest;
import io.cri4j.cri.v1.PodSandboxStatsResponse;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.PodSandboxStatusResponse;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.cri.v1.PortForwardResponse;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.PullImageResponse;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemoveContainerResponse;
import io.cri4j.cri.v1.RemoveImageRequest;
import io.cri4j.cri.v1.RemoveImageResponse;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RemovePodSandboxResponse;
import io.cri4j.cri.v1.ReopenContainerLogRequest;
import io.cri4j.cri.v1.ReopenContainerLogResponse;
import io.cri4j.cri.v1.RestorePodRequest;
import io.cri4j.cri.v1.RestorePodResponse;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.RuntimeConfigRequest;
import io.cri4j.cri.v1.RuntimeConfigResponse;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StartContainerResponse;
import io.cri4j.cri.v1.StatusRequest;
import io.cri4j.cri.v1.StatusResponse;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopContainerResponse;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.StopPodSandboxResponse;
import io.cri4j.cri.v1.StreamContainerStatsRequest;
import io.cri4j.cri.v1.StreamContainerStatsResponse;
import io.cri4j.cri.v1.StreamContainersRequest;
import io.cri4j.cri.v1.StreamContainersResponse;
import io.cri4j.cri.v1.StreamImagesRequest;
import io.cri4j.cri.v1.StreamImagesResponse;
import io.cri4j.cri.v1.StreamPodSandboxMetricsRequest;
import io.cri4j.cri.v1.StreamPodSandboxMetricsResponse;
import io.cri4j.cri.v1.StreamPodSandboxStatsRequest;
import io.cri4j.cri.v1.StreamPodSandboxStatsResponse;
import io.cri4j.cri.v1.StreamPodSandboxesRequest;
import io.cri4j.cri.v1.StreamPodSandboxesResponse;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesResponse;
import io.cri4j.cri.v1.UpdatePodSandboxResourcesRequest;
import io.cri4j.cri.v1.UpdatePodSandboxResourcesResponse;
import io.cri4j.cri.v1.UpdateRuntimeConfigRequest;
import io.cri4j.cri.v1.UpdateRuntimeConfigResponse;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.hook.internal.CriMethods;
import io.grpc.MethodDescriptor;
import io.grpc.StatusException;
import java.util.Set;

/**
 * A blocking {@link CriInterceptor} with a typed method per CRI RPC: override the ones you want,
 * e.g. {@code createContainer(CreateContainerRequest, UnaryChain)}; every method you do not
 * override proceeds with the request unchanged. The methods may block: a proxy runs them on a
 * worker thread (see {@link CriInterceptor}). {@link ForwardingAsyncCriInterceptor} is the same
 * for code that never blocks.
 *
 * <pre>{@code
 * class TeamLabel extends ForwardingCriInterceptor {
 *   public RunPodSandboxResponse runPodSandbox(RunPodSandboxRequest request,
 *       UnaryChain<RunPodSandboxRequest, RunPodSandboxResponse> chain) throws StatusException {
 *     String team = teams.lookup(request.getConfig().getMetadata().getNamespace()); // may block
 *     return chain.proceed(request.toBuilder()
 *         .setConfig(request.getConfig().toBuilder().putLabels("team", team)).build());
 *   }
 * }
 * }</pre>
 *
 * <p>Each unary method gets the request and the typed rest of the chain: return
 * {@code chain.proceed(request)} (changed or not), change what it returns, or return a response
 * of your own without proceeding; throw a {@link StatusException} to fail the call. Each
 * server-streaming method gets the request and the typed {@link StreamingChain}. The client's
 * headers are {@code chain.metadata()}; {@code chain.method()} tells {@code runtime.v1} from
 * {@code runtime.v1alpha2} (both are presented with the v1 message classes).
 *
 * <p>{@link #intercepts} answers true for the CRI methods whose typed method the subclass
 * overrides (of {@code runtime.v1} and {@code runtime.v1alpha2}); a proxy leaves every other call
 * undecoded. Override it to narrow that.
 */
public abstract class ForwardingCriInterceptor implements CriInterceptor {
    private final Set<String> overridden;

    /** Finds the typed methods the subclass overrides. */
    protected ForwardingCriInterceptor() {
        this.overridden = CriMethods.overridden(getClass(), ForwardingCriInterceptor.class);
    }

    /**
     * True for the {@code runtime.v1} and {@code runtime.v1alpha2} RuntimeService and ImageService
     * methods whose typed method this class overrides.
     */
    @Override
    public boolean intercepts(MethodDescriptor<?, ?> method) {
        return CriMethods.isCri(method) && overridden.contains(method.getBareMethodName());
    }

    /** Calls the typed method of the call's CRI method; other methods proceed unchanged. */
    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public final <Q, R> R interceptUnary(UnaryChain<Q, R> chain) throws StatusException {
        if (!CriMethods.isCri(chain.method())) {
            return chain.proceed(chain.request());
        }
        UnaryChain c = chain;
        Object q = chain.request();
        Object out =
                switch (chain.method().getBareMethodName()) {
                    case "Attach" -> attach((AttachRequest) q, c);
                    case "CheckpointContainer" ->
                            checkpointContainer((CheckpointContainerRequest) q, c);
                    case "CheckpointPod" -> checkpointPod((CheckpointPodRequest) q, c);
                    case "ContainerStats" -> containerStats((ContainerStatsRequest) q, c);
                    case "ContainerStatus" -> containerStatus((ContainerStatusRequest) q, c);
                    case "CreateContainer" -> createContainer((CreateContainerRequest) q, c);
                    case "Exec" -> exec((ExecRequest) q, c);
                    case "ExecSync" -> execSync((ExecSyncRequest) q, c);
                    case "ListContainerStats" ->
                            listContainerStats((ListContainerStatsRequest) q, c);
                    case "ListContainers" -> listContainers((ListContainersRequest) q, c);
                    case "ListMetricDescriptors" ->
                            listMetricDescriptors((ListMetricDescriptorsRequest) q, c);
                    case "ListPodSandbox" -> listPodSandbox((ListPodSandboxRequest) q, c);
                    case "ListPodSandboxMetrics" ->
                            listPodSandboxMetrics((ListPodSandboxMetricsRequest) q, c);
                    case "ListPodSandboxStats" ->
                            listPodSandboxStats((ListPodSandboxStatsRequest) q, c);
                    case "PodSandboxStats" -> podSandboxStats((PodSandboxStatsRequest) q, c);
                    case "PodSandboxStatus" -> podSandboxStatus((PodSandboxStatusRequest) q, c);
                    case "PortForward" -> portForward((PortForwardRequest) q, c);
                    case "RemoveContainer" -> removeContainer((RemoveContainerRequest) q, c);
                    case "RemovePodSandbox" -> removePodSandbox((RemovePodSandboxRequest) q, c);
                    case "ReopenContainerLog" ->
                            reopenContainerLog((ReopenContainerLogRequest) q, c);
                    case "RestorePod" -> restorePod((RestorePodRequest) q, c);
                    case "RunPodSandbox" -> runPodSandbox((RunPodSandboxRequest) q, c);
                    case "RuntimeConfig" -> runtimeConfig((RuntimeConfigRequest) q, c);
                    case "StartContainer" -> startContainer((StartContainerRequest) q, c);
                    case "Status" -> status((StatusRequest) q, c);
                    case "StopContainer" -> stopContainer((StopContainerRequest) q, c);
                    case "StopPodSandbox" -> stopPodSandbox((StopPodSandboxRequest) q, c);
                    case "UpdateContainerResources" ->
                            updateContainerResources((UpdateContainerResourcesRequest) q, c);
                    case "UpdatePodSandboxResources" ->
                            updatePodSandboxResources((UpdatePodSandboxResourcesRequest) q, c);
                    case "UpdateRuntimeConfig" ->
                            updateRuntimeConfig((UpdateRuntimeConfigRequest) q, c);
                    case "Version" -> version((VersionRequest) q, c);
                    case "ImageFsInfo" -> imageFsInfo((ImageFsInfoRequest) q, c);
                    case "ImageStatus" -> imageStatus((ImageStatusRequest) q, c);
                    case "ListImages" -> listImages((ListImagesRequest) q, c);
                    case "PullImage" -> pullImage((PullImageRequest) q, c);
                    case "RemoveImage" -> removeImage((RemoveImageRequest) q, c);
                    default -> chain.proceed(chain.request());
                };
        return (R) out;
    }

    /** Calls the typed method of the call's CRI method; other methods proceed unchanged. */
    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public final <Q, R> void interceptServerStreaming(StreamingChain<Q, R> chain) {
        if (!CriMethods.isCri(chain.method())) {
            chain.proceed(chain.request(), chain.responses());
            return;
        }
        StreamingChain c = chain;
        Object q = chain.request();
        switch (chain.method().getBareMethodName()) {
            case "GetContainerEvents" -> getContainerEvents((GetEventsRequest) q, c);
            case "StreamContainerStats" -> streamContainerStats((StreamContainerStatsRequest) q, c);
            case "StreamContainers" -> streamContainers((StreamContainersRequest) q, c);
            case "StreamPodSandboxMetrics" ->
                    streamPodSandboxMetrics((StreamPodSandboxMetricsRequest) q, c);
            case "StreamPodSandboxStats" ->
                    streamPodSandboxStats((StreamPodSandboxStatsRequest) q, c);
            case "StreamPodSandboxes" -> streamPodSandboxes((StreamPodSandboxesRequest) q, c);
            case "StreamImages" -> streamImages((StreamImagesRequest) q, c);
            default -> chain.proceed(chain.request(), chain.responses());
        }
    }

    /** {@code RuntimeService/Attach}: proceeds unchanged. */
    public AttachResponse attach(
            AttachRequest request, UnaryChain<AttachRequest, AttachResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/CheckpointContainer}: proceeds unchanged. */
    public CheckpointContainerResponse checkpointContainer(
            CheckpointContainerRequest request,
            UnaryChain<CheckpointContainerRequest, CheckpointContainerResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/CheckpointPod}: proceeds unchanged. */
    public CheckpointPodResponse checkpointPod(
            CheckpointPodRequest request,
            UnaryChain<CheckpointPodRequest, CheckpointPodResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ContainerStats}: proceeds unchanged. */
    public ContainerStatsResponse containerStats(
            ContainerStatsRequest request,
            UnaryChain<ContainerStatsRequest, ContainerStatsResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ContainerStatus}: proceeds unchanged. */
    public ContainerStatusResponse containerStatus(
            ContainerStatusRequest request,
            UnaryChain<ContainerStatusRequest, ContainerStatusResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/CreateContainer}: proceeds unchanged. */
    public CreateContainerResponse createContainer(
            CreateContainerRequest request,
            UnaryChain<CreateContainerRequest, CreateContainerResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/Exec}: proceeds unchanged. */
    public ExecResponse exec(ExecRequest request, UnaryChain<ExecRequest, ExecResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ExecSync}: proceeds unchanged. */
    public ExecSyncResponse execSync(
            ExecSyncRequest request, UnaryChain<ExecSyncRequest, ExecSyncResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/GetContainerEvents}, server-streaming: proceeds unchanged. */
    public void getContainerEvents(
            GetEventsRequest request,
            StreamingChain<GetEventsRequest, ContainerEventResponse> chain) {
        chain.proceed(request, chain.responses());
    }

    /** {@code RuntimeService/ListContainerStats}: proceeds unchanged. */
    public ListContainerStatsResponse listContainerStats(
            ListContainerStatsRequest request,
            UnaryChain<ListContainerStatsRequest, ListContainerStatsResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListContainers}: proceeds unchanged. */
    public ListContainersResponse listContainers(
            ListContainersRequest request,
            UnaryChain<ListContainersRequest, ListContainersResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListMetricDescriptors}: proceeds unchanged. */
    public ListMetricDescriptorsResponse listMetricDescriptors(
            ListMetricDescriptorsRequest request,
            UnaryChain<ListMetricDescriptorsRequest, ListMetricDescriptorsResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListPodSandbox}: proceeds unchanged. */
    public ListPodSandboxResponse listPodSandbox(
            ListPodSandboxRequest request,
            UnaryChain<ListPodSandboxRequest, ListPodSandboxResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListPodSandboxMetrics}: proceeds unchanged. */
    public ListPodSandboxMetricsResponse listPodSandboxMetrics(
            ListPodSandboxMetricsRequest request,
            UnaryChain<ListPodSandboxMetricsRequest, ListPodSandboxMetricsResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListPodSandboxStats}: proceeds unchanged. */
    public ListPodSandboxStatsResponse listPodSandboxStats(
            ListPodSandboxStatsRequest request,
            UnaryChain<ListPodSandboxStatsRequest, ListPodSandboxStatsResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/PodSandboxStats}: proceeds unchanged. */
    public PodSandboxStatsResponse podSandboxStats(
            PodSandboxStatsRequest request,
            UnaryChain<PodSandboxStatsRequest, PodSandboxStatsResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/PodSandboxStatus}: proceeds unchanged. */
    public PodSandboxStatusResponse podSandboxStatus(
            PodSandboxStatusRequest request,
            UnaryChain<PodSandboxStatusRequest, PodSandboxStatusResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/PortForward}: proceeds unchanged. */
    public PortForwardResponse portForward(
            PortForwardRequest request, UnaryChain<PortForwardRequest, PortForwardResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RemoveContainer}: proceeds unchanged. */
    public RemoveContainerResponse removeContainer(
            RemoveContainerRequest request,
            UnaryChain<RemoveContainerRequest, RemoveContainerResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RemovePodSandbox}: proceeds unchanged. */
    public RemovePodSandboxResponse removePodSandbox(
            RemovePodSandboxRequest request,
            UnaryChain<RemovePodSandboxRequest, RemovePodSandboxResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ReopenContainerLog}: proceeds unchanged. */
    public ReopenContainerLogResponse reopenContainerLog(
            ReopenContainerLogRequest request,
            UnaryChain<ReopenContainerLogRequest, ReopenContainerLogResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RestorePod}: proceeds unchanged. */
    public RestorePodResponse restorePod(
            RestorePodRequest request, UnaryChain<RestorePodRequest, RestorePodResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RunPodSandbox}: proceeds unchanged. */
    public RunPodSandboxResponse runPodSandbox(
            RunPodSandboxRequest request,
            UnaryChain<RunPodSandboxRequest, RunPodSandboxResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RuntimeConfig}: proceeds unchanged. */
    public RuntimeConfigResponse runtimeConfig(
            RuntimeConfigRequest request,
            UnaryChain<RuntimeConfigRequest, RuntimeConfigResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/StartContainer}: proceeds unchanged. */
    public StartContainerResponse startContainer(
            StartContainerRequest request,
            UnaryChain<StartContainerRequest, StartContainerResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/Status}: proceeds unchanged. */
    public StatusResponse status(
            StatusRequest request, UnaryChain<StatusRequest, StatusResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/StopContainer}: proceeds unchanged. */
    public StopContainerResponse stopContainer(
            StopContainerRequest request,
            UnaryChain<StopContainerRequest, StopContainerResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/StopPodSandbox}: proceeds unchanged. */
    public StopPodSandboxResponse stopPodSandbox(
            StopPodSandboxRequest request,
            UnaryChain<StopPodSandboxRequest, StopPodSandboxResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/StreamContainerStats}, server-streaming: proceeds unchanged. */
    public void streamContainerStats(
            StreamContainerStatsRequest request,
            StreamingChain<StreamContainerStatsRequest, StreamContainerStatsResponse> chain) {
        chain.proceed(request, chain.responses());
    }

    /** {@code RuntimeService/StreamContainers}, server-streaming: proceeds unchanged. */
    public void streamContainers(
            StreamContainersRequest request,
            StreamingChain<StreamContainersRequest, StreamContainersResponse> chain) {
        chain.proceed(request, chain.responses());
    }

    /** {@code RuntimeService/StreamPodSandboxMetrics}, server-streaming: proceeds unchanged. */
    public void streamPodSandboxMetrics(
            StreamPodSandboxMetricsRequest request,
            StreamingChain<StreamPodSandboxMetricsRequest, StreamPodSandboxMetricsResponse> chain) {
        chain.proceed(request, chain.responses());
    }

    /** {@code RuntimeService/StreamPodSandboxStats}, server-streaming: proceeds unchanged. */
    public void streamPodSandboxStats(
            StreamPodSandboxStatsRequest request,
            StreamingChain<StreamPodSandboxStatsRequest, StreamPodSandboxStatsResponse> chain) {
        chain.proceed(request, chain.responses());
    }

    /** {@code RuntimeService/StreamPodSandboxes}, server-streaming: proceeds unchanged. */
    public void streamPodSandboxes(
            StreamPodSandboxesRequest request,
            StreamingChain<StreamPodSandboxesRequest, StreamPodSandboxesResponse> chain) {
        chain.proceed(request, chain.responses());
    }

    /** {@code RuntimeService/UpdateContainerResources}: proceeds unchanged. */
    public UpdateContainerResourcesResponse updateContainerResources(
            UpdateContainerResourcesRequest request,
            UnaryChain<UpdateContainerResourcesRequest, UpdateContainerResourcesResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/UpdatePodSandboxResources}: proceeds unchanged. */
    public UpdatePodSandboxResourcesResponse updatePodSandboxResources(
            UpdatePodSandboxResourcesRequest request,
            UnaryChain<UpdatePodSandboxResourcesRequest, UpdatePodSandboxResourcesResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/UpdateRuntimeConfig}: proceeds unchanged. */
    public UpdateRuntimeConfigResponse updateRuntimeConfig(
            UpdateRuntimeConfigRequest request,
            UnaryChain<UpdateRuntimeConfigRequest, UpdateRuntimeConfigResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/Version}: proceeds unchanged. */
    public VersionResponse version(
            VersionRequest request, UnaryChain<VersionRequest, VersionResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code ImageService/ImageFsInfo}: proceeds unchanged. */
    public ImageFsInfoResponse imageFsInfo(
            ImageFsInfoRequest request, UnaryChain<ImageFsInfoRequest, ImageFsInfoResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code ImageService/ImageStatus}: proceeds unchanged. */
    public ImageStatusResponse imageStatus(
            ImageStatusRequest request, UnaryChain<ImageStatusRequest, ImageStatusResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code ImageService/ListImages}: proceeds unchanged. */
    public ListImagesResponse listImages(
            ListImagesRequest request, UnaryChain<ListImagesRequest, ListImagesResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code ImageService/PullImage}: proceeds unchanged. */
    public PullImageResponse pullImage(
            PullImageRequest request, UnaryChain<PullImageRequest, PullImageResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code ImageService/RemoveImage}: proceeds unchanged. */
    public RemoveImageResponse removeImage(
            RemoveImageRequest request, UnaryChain<RemoveImageRequest, RemoveImageResponse> chain)
            throws StatusException {
        return chain.proceed(request);
    }

    /** {@code ImageService/StreamImages}, server-streaming: proceeds unchanged. */
    public void streamImages(
            StreamImagesRequest request,
            StreamingChain<StreamImagesRequest, StreamImagesResponse> chain) {
        chain.proceed(request, chain.responses());
    }
}

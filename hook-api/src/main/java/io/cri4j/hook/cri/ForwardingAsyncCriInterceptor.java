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
import java.util.Set;
import java.util.concurrent.CompletionStage;

/**
 * An {@link AsyncCriInterceptor} with a typed method per CRI RPC: override the ones you want,
 * e.g. {@code createContainer(CreateContainerRequest, AsyncUnaryChain)}; every method you do not
 * override proceeds with the request unchanged. The methods must not block (see
 * {@link AsyncCriInterceptor}): a proxy calls them on its I/O thread.
 * {@link ForwardingCriInterceptor} is the same for code that blocks.
 *
 * <pre>{@code
 * class StampPods extends ForwardingAsyncCriInterceptor {
 *   public CompletionStage<RunPodSandboxResponse> runPodSandbox(RunPodSandboxRequest request,
 *       AsyncUnaryChain<RunPodSandboxRequest, RunPodSandboxResponse> chain) {
 *     return chain.proceed(request.toBuilder()
 *         .setConfig(request.getConfig().toBuilder().putLabels("stamped", "yes")).build());
 *   }
 * }
 * }</pre>
 *
 * <p>Each unary method gets the request and the typed rest of the chain: return
 * {@code chain.proceed(request)} (changed or not), a stage derived from it, or a stage of your
 * own without proceeding (a failed one fails the call with its status). Each server-streaming
 * method gets the request and the typed {@link StreamingChain}. The client's headers are
 * {@code chain.metadata()}; {@code chain.method()} tells {@code runtime.v1} from
 * {@code runtime.v1alpha2} (both are presented with the v1 message classes).
 *
 * <p>{@link #intercepts} answers true for the CRI methods whose typed method the subclass
 * overrides (of {@code runtime.v1} and {@code runtime.v1alpha2}); a proxy leaves every other call
 * undecoded. Override it to narrow that.
 */
public abstract class ForwardingAsyncCriInterceptor implements AsyncCriInterceptor {
    private final Set<String> overridden;

    /** Finds the typed methods the subclass overrides. */
    protected ForwardingAsyncCriInterceptor() {
        this.overridden = CriMethods.overridden(getClass(), ForwardingAsyncCriInterceptor.class);
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
    public final <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> chain) {
        if (!CriMethods.isCri(chain.method())) {
            return chain.proceed(chain.request());
        }
        AsyncUnaryChain c = chain;
        Object q = chain.request();
        CompletionStage<?> out =
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
        return (CompletionStage<R>) out;
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
    public CompletionStage<AttachResponse> attach(
            AttachRequest request, AsyncUnaryChain<AttachRequest, AttachResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/CheckpointContainer}: proceeds unchanged. */
    public CompletionStage<CheckpointContainerResponse> checkpointContainer(
            CheckpointContainerRequest request,
            AsyncUnaryChain<CheckpointContainerRequest, CheckpointContainerResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/CheckpointPod}: proceeds unchanged. */
    public CompletionStage<CheckpointPodResponse> checkpointPod(
            CheckpointPodRequest request,
            AsyncUnaryChain<CheckpointPodRequest, CheckpointPodResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ContainerStats}: proceeds unchanged. */
    public CompletionStage<ContainerStatsResponse> containerStats(
            ContainerStatsRequest request,
            AsyncUnaryChain<ContainerStatsRequest, ContainerStatsResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ContainerStatus}: proceeds unchanged. */
    public CompletionStage<ContainerStatusResponse> containerStatus(
            ContainerStatusRequest request,
            AsyncUnaryChain<ContainerStatusRequest, ContainerStatusResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/CreateContainer}: proceeds unchanged. */
    public CompletionStage<CreateContainerResponse> createContainer(
            CreateContainerRequest request,
            AsyncUnaryChain<CreateContainerRequest, CreateContainerResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/Exec}: proceeds unchanged. */
    public CompletionStage<ExecResponse> exec(
            ExecRequest request, AsyncUnaryChain<ExecRequest, ExecResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ExecSync}: proceeds unchanged. */
    public CompletionStage<ExecSyncResponse> execSync(
            ExecSyncRequest request, AsyncUnaryChain<ExecSyncRequest, ExecSyncResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/GetContainerEvents}, server-streaming: proceeds unchanged. */
    public void getContainerEvents(
            GetEventsRequest request,
            StreamingChain<GetEventsRequest, ContainerEventResponse> chain) {
        chain.proceed(request, chain.responses());
    }

    /** {@code RuntimeService/ListContainerStats}: proceeds unchanged. */
    public CompletionStage<ListContainerStatsResponse> listContainerStats(
            ListContainerStatsRequest request,
            AsyncUnaryChain<ListContainerStatsRequest, ListContainerStatsResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListContainers}: proceeds unchanged. */
    public CompletionStage<ListContainersResponse> listContainers(
            ListContainersRequest request,
            AsyncUnaryChain<ListContainersRequest, ListContainersResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListMetricDescriptors}: proceeds unchanged. */
    public CompletionStage<ListMetricDescriptorsResponse> listMetricDescriptors(
            ListMetricDescriptorsRequest request,
            AsyncUnaryChain<ListMetricDescriptorsRequest, ListMetricDescriptorsResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListPodSandbox}: proceeds unchanged. */
    public CompletionStage<ListPodSandboxResponse> listPodSandbox(
            ListPodSandboxRequest request,
            AsyncUnaryChain<ListPodSandboxRequest, ListPodSandboxResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListPodSandboxMetrics}: proceeds unchanged. */
    public CompletionStage<ListPodSandboxMetricsResponse> listPodSandboxMetrics(
            ListPodSandboxMetricsRequest request,
            AsyncUnaryChain<ListPodSandboxMetricsRequest, ListPodSandboxMetricsResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ListPodSandboxStats}: proceeds unchanged. */
    public CompletionStage<ListPodSandboxStatsResponse> listPodSandboxStats(
            ListPodSandboxStatsRequest request,
            AsyncUnaryChain<ListPodSandboxStatsRequest, ListPodSandboxStatsResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/PodSandboxStats}: proceeds unchanged. */
    public CompletionStage<PodSandboxStatsResponse> podSandboxStats(
            PodSandboxStatsRequest request,
            AsyncUnaryChain<PodSandboxStatsRequest, PodSandboxStatsResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/PodSandboxStatus}: proceeds unchanged. */
    public CompletionStage<PodSandboxStatusResponse> podSandboxStatus(
            PodSandboxStatusRequest request,
            AsyncUnaryChain<PodSandboxStatusRequest, PodSandboxStatusResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/PortForward}: proceeds unchanged. */
    public CompletionStage<PortForwardResponse> portForward(
            PortForwardRequest request,
            AsyncUnaryChain<PortForwardRequest, PortForwardResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RemoveContainer}: proceeds unchanged. */
    public CompletionStage<RemoveContainerResponse> removeContainer(
            RemoveContainerRequest request,
            AsyncUnaryChain<RemoveContainerRequest, RemoveContainerResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RemovePodSandbox}: proceeds unchanged. */
    public CompletionStage<RemovePodSandboxResponse> removePodSandbox(
            RemovePodSandboxRequest request,
            AsyncUnaryChain<RemovePodSandboxRequest, RemovePodSandboxResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/ReopenContainerLog}: proceeds unchanged. */
    public CompletionStage<ReopenContainerLogResponse> reopenContainerLog(
            ReopenContainerLogRequest request,
            AsyncUnaryChain<ReopenContainerLogRequest, ReopenContainerLogResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RestorePod}: proceeds unchanged. */
    public CompletionStage<RestorePodResponse> restorePod(
            RestorePodRequest request,
            AsyncUnaryChain<RestorePodRequest, RestorePodResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RunPodSandbox}: proceeds unchanged. */
    public CompletionStage<RunPodSandboxResponse> runPodSandbox(
            RunPodSandboxRequest request,
            AsyncUnaryChain<RunPodSandboxRequest, RunPodSandboxResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/RuntimeConfig}: proceeds unchanged. */
    public CompletionStage<RuntimeConfigResponse> runtimeConfig(
            RuntimeConfigRequest request,
            AsyncUnaryChain<RuntimeConfigRequest, RuntimeConfigResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/StartContainer}: proceeds unchanged. */
    public CompletionStage<StartContainerResponse> startContainer(
            StartContainerRequest request,
            AsyncUnaryChain<StartContainerRequest, StartContainerResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/Status}: proceeds unchanged. */
    public CompletionStage<StatusResponse> status(
            StatusRequest request, AsyncUnaryChain<StatusRequest, StatusResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/StopContainer}: proceeds unchanged. */
    public CompletionStage<StopContainerResponse> stopContainer(
            StopContainerRequest request,
            AsyncUnaryChain<StopContainerRequest, StopContainerResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/StopPodSandbox}: proceeds unchanged. */
    public CompletionStage<StopPodSandboxResponse> stopPodSandbox(
            StopPodSandboxRequest request,
            AsyncUnaryChain<StopPodSandboxRequest, StopPodSandboxResponse> chain) {
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
    public CompletionStage<UpdateContainerResourcesResponse> updateContainerResources(
            UpdateContainerResourcesRequest request,
            AsyncUnaryChain<UpdateContainerResourcesRequest, UpdateContainerResourcesResponse>
                    chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/UpdatePodSandboxResources}: proceeds unchanged. */
    public CompletionStage<UpdatePodSandboxResourcesResponse> updatePodSandboxResources(
            UpdatePodSandboxResourcesRequest request,
            AsyncUnaryChain<UpdatePodSandboxResourcesRequest, UpdatePodSandboxResourcesResponse>
                    chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/UpdateRuntimeConfig}: proceeds unchanged. */
    public CompletionStage<UpdateRuntimeConfigResponse> updateRuntimeConfig(
            UpdateRuntimeConfigRequest request,
            AsyncUnaryChain<UpdateRuntimeConfigRequest, UpdateRuntimeConfigResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code RuntimeService/Version}: proceeds unchanged. */
    public CompletionStage<VersionResponse> version(
            VersionRequest request, AsyncUnaryChain<VersionRequest, VersionResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code ImageService/ImageFsInfo}: proceeds unchanged. */
    public CompletionStage<ImageFsInfoResponse> imageFsInfo(
            ImageFsInfoRequest request,
            AsyncUnaryChain<ImageFsInfoRequest, ImageFsInfoResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code ImageService/ImageStatus}: proceeds unchanged. */
    public CompletionStage<ImageStatusResponse> imageStatus(
            ImageStatusRequest request,
            AsyncUnaryChain<ImageStatusRequest, ImageStatusResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code ImageService/ListImages}: proceeds unchanged. */
    public CompletionStage<ListImagesResponse> listImages(
            ListImagesRequest request,
            AsyncUnaryChain<ListImagesRequest, ListImagesResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code ImageService/PullImage}: proceeds unchanged. */
    public CompletionStage<PullImageResponse> pullImage(
            PullImageRequest request, AsyncUnaryChain<PullImageRequest, PullImageResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code ImageService/RemoveImage}: proceeds unchanged. */
    public CompletionStage<RemoveImageResponse> removeImage(
            RemoveImageRequest request,
            AsyncUnaryChain<RemoveImageRequest, RemoveImageResponse> chain) {
        return chain.proceed(request);
    }

    /** {@code ImageService/StreamImages}, server-streaming: proceeds unchanged. */
    public void streamImages(
            StreamImagesRequest request,
            StreamingChain<StreamImagesRequest, StreamImagesResponse> chain) {
        chain.proceed(request, chain.responses());
    }
}

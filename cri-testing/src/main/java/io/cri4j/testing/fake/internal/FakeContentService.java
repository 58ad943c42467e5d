package io.cri4j.testing.fake.internal;

import com.google.protobuf.ByteString;
import io.cri4j.cri.internal.containerd.ContentGrpc;
import io.cri4j.cri.internal.containerd.InfoRequest;
import io.cri4j.cri.internal.containerd.InfoResponse;
import io.cri4j.cri.internal.containerd.ListContentRequest;
import io.cri4j.cri.internal.containerd.ListContentResponse;
import io.cri4j.cri.internal.containerd.ListStatusesRequest;
import io.cri4j.cri.internal.containerd.ListStatusesResponse;
import io.cri4j.cri.internal.containerd.ReadContentRequest;
import io.cri4j.cri.internal.containerd.ReadContentResponse;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Optional;

/**
 * The fake's {@code containerd.services.content.v1.Content} (Info, List, Read, ListStatuses) over
 * {@link FakeContent}, answering as containerd does: the namespace comes from the
 * {@code containerd-namespace} header (missing: FAILED_PRECONDITION; other than {@code k8s.io}: an empty
 * store), an unknown digest is NOT_FOUND, a filter that does not parse is INVALID_ARGUMENT.
 */
public final class FakeContentService extends ContentGrpc.ContentImplBase {

    private static final Metadata.Key<String> NAMESPACE_HEADER =
            Metadata.Key.of("containerd-namespace", Metadata.ASCII_STRING_MARSHALLER);
    private static final Context.Key<String> NAMESPACE = Context.key("containerd-namespace");
    private static final int READ_CHUNK = 1 << 20;
    private static final int LIST_BATCH = 100;

    private final FakeContent content;

    public FakeContentService(FakeContent content) {
        this.content = content;
    }

    /** The service with the interceptor that reads the namespace header. */
    public ServerServiceDefinition bind() {
        return ServerInterceptors.intercept(
                bindService(),
                new io.grpc.ServerInterceptor() {
                    @Override
                    public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(
                            io.grpc.ServerCall<Q, R> call,
                            Metadata headers,
                            io.grpc.ServerCallHandler<Q, R> next) {
                        String ns = headers.get(NAMESPACE_HEADER);
                        return Contexts.interceptCall(
                                Context.current().withValue(NAMESPACE, ns == null ? "" : ns),
                                call,
                                headers,
                                next);
                    }
                });
    }

    /** Whether the call's namespace holds the fake's content; fails the call when it names none. */
    private static boolean inNamespace(StreamObserver<?> out) {
        String ns = NAMESPACE.get();
        if (ns == null || ns.isEmpty()) {
            out.onError(
                    Status.FAILED_PRECONDITION
                            .withDescription("namespace is required: failed precondition")
                            .asRuntimeException());
            return false;
        }
        return true;
    }

    private static boolean criNamespace() {
        return FakeContent.NAMESPACE.equals(NAMESPACE.get());
    }

    private static Optional<ContainerdFilter> filter(List<String> filters, StreamObserver<?> out) {
        try {
            return Optional.of(ContainerdFilter.parseAll(filters));
        } catch (IllegalArgumentException e) {
            out.onError(
                    Status.INVALID_ARGUMENT
                            .withDescription(e.getMessage() + ": invalid argument")
                            .asRuntimeException());
            return Optional.empty();
        }
    }

    private static io.grpc.StatusRuntimeException notFound(String digest) {
        return Status.NOT_FOUND
                .withDescription("content digest " + digest + ": not found")
                .asRuntimeException();
    }

    @Override
    public void info(InfoRequest request, StreamObserver<InfoResponse> out) {
        if (!inNamespace(out)) {
            return;
        }
        Optional<io.cri4j.cri.internal.containerd.Info> info =
                criNamespace() ? content.info(request.getDigest()) : Optional.empty();
        if (info.isEmpty()) {
            out.onError(notFound(request.getDigest()));
            return;
        }
        out.onNext(InfoResponse.newBuilder().setInfo(info.get()).build());
        out.onCompleted();
    }

    @Override
    public void list(ListContentRequest request, StreamObserver<ListContentResponse> out) {
        if (!inNamespace(out)) {
            return;
        }
        Optional<ContainerdFilter> f = filter(request.getFiltersList(), out);
        if (f.isEmpty()) {
            return;
        }
        List<io.cri4j.cri.internal.containerd.Info> infos =
                criNamespace() ? content.list(f.get()) : List.of();
        for (int i = 0; i < infos.size(); i += LIST_BATCH) {
            out.onNext(
                    ListContentResponse.newBuilder()
                            .addAllInfo(infos.subList(i, Math.min(infos.size(), i + LIST_BATCH)))
                            .build());
        }
        out.onCompleted();
    }

    @Override
    public void read(ReadContentRequest request, StreamObserver<ReadContentResponse> out) {
        if (!inNamespace(out)) {
            return;
        }
        Optional<byte[]> data;
        try {
            data = criNamespace() ? content.read(request.getDigest()) : Optional.empty();
        } catch (IllegalStateException e) {
            out.onError(
                    Status.FAILED_PRECONDITION
                            .withDescription(e.getMessage())
                            .asRuntimeException());
            return;
        }
        if (data.isEmpty()) {
            out.onError(notFound(request.getDigest()));
            return;
        }
        byte[] bytes = data.get();
        long from = Math.max(0, request.getOffset());
        long to =
                request.getSize() > 0
                        ? Math.min(bytes.length, from + request.getSize())
                        : bytes.length;
        for (long at = from; at < to; at += READ_CHUNK) {
            int n = (int) Math.min(READ_CHUNK, to - at);
            out.onNext(
                    ReadContentResponse.newBuilder()
                            .setOffset(at)
                            .setData(ByteString.copyFrom(bytes, (int) at, n))
                            .build());
        }
        out.onCompleted();
    }

    @Override
    public void listStatuses(
            ListStatusesRequest request, StreamObserver<ListStatusesResponse> out) {
        if (!inNamespace(out)) {
            return;
        }
        Optional<ContainerdFilter> f = filter(request.getFiltersList(), out);
        if (f.isEmpty()) {
            return;
        }
        out.onNext(
                ListStatusesResponse.newBuilder()
                        .addAllStatuses(criNamespace() ? content.statuses(f.get()) : List.of())
                        .build());
        out.onCompleted();
    }
}

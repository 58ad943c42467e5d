package io.cri4j.testing.fake.internal;

import io.grpc.Attributes;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;

/**
 * Serves a {@code runtime.v1alpha2} service with the {@code runtime.v1} implementation, once for all methods:
 * the fields both versions share have the same numbers and types, so a v1alpha2 request re-parsed from its
 * bytes is the v1 request (and back for responses). Fields only v1 has are carried as unknown fields.
 */
public final class V1alpha2Bridge {

    private V1alpha2Bridge() {}

    /**
     * Builds the v1alpha2 service definition from the v1 one.
     *
     * @param v1       the bound v1 service
     * @param v1alpha2 the v1alpha2 service descriptor, e.g. {@code io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.getServiceDescriptor()}
     * @throws IllegalStateException when a v1alpha2 method has no v1 counterpart
     */
    public static ServerServiceDefinition bridge(
            ServerServiceDefinition v1, ServiceDescriptor v1alpha2) {
        String v1Name = v1.getServiceDescriptor().getName();
        ServerServiceDefinition.Builder b = ServerServiceDefinition.builder(v1alpha2);
        for (MethodDescriptor<?, ?> method : v1alpha2.getMethods()) {
            ServerMethodDefinition<?, ?> target =
                    v1.getMethod(v1Name + "/" + method.getBareMethodName());
            if (target == null) {
                throw new IllegalStateException("no v1 method for " + method.getFullMethodName());
            }
            b.addMethod(adapt(method, target));
        }
        return b.build();
    }

    private static <AReq, AResp, VReq, VResp> ServerMethodDefinition<AReq, AResp> adapt(
            MethodDescriptor<AReq, AResp> alpha, ServerMethodDefinition<VReq, VResp> v1) {
        MethodDescriptor<VReq, VResp> v1Method = v1.getMethodDescriptor();
        ServerCallHandler<VReq, VResp> v1Handler = v1.getServerCallHandler();
        ServerCallHandler<AReq, AResp> handler =
                (call, headers) -> {
                    Context context = Context.current().withValue(ApiVersion.KEY, "v1alpha2");
                    ServerCall<VReq, VResp> inner = new ConvertingCall<>(call, alpha, v1Method);
                    ServerCall.Listener<VReq> listener;
                    Context previous = context.attach();
                    try {
                        listener = v1Handler.startCall(inner, headers);
                    } finally {
                        context.detach(previous);
                    }
                    return new ServerCall.Listener<>() {
                        @Override
                        public void onMessage(AReq message) {
                            VReq converted;
                            try {
                                converted = v1Method.parseRequest(alpha.streamRequest(message));
                            } catch (RuntimeException e) {
                                call.close(
                                        Status.INTERNAL.withDescription(
                                                "cannot convert v1alpha2 request to v1: " + e),
                                        new Metadata());
                                return;
                            }
                            context.run(() -> listener.onMessage(converted));
                        }

                        @Override
                        public void onHalfClose() {
                            context.run(listener::onHalfClose);
                        }

                        @Override
                        public void onCancel() {
                            context.run(listener::onCancel);
                        }

                        @Override
                        public void onComplete() {
                            context.run(listener::onComplete);
                        }

                        @Override
                        public void onReady() {
                            context.run(listener::onReady);
                        }
                    };
                };
        return ServerMethodDefinition.create(alpha, handler);
    }

    /** The v1 view of a v1alpha2 call: responses are converted back to v1alpha2 on the way out. */
    private static final class ConvertingCall<AReq, AResp, VReq, VResp>
            extends ServerCall<VReq, VResp> {
        private final ServerCall<AReq, AResp> call;
        private final MethodDescriptor<AReq, AResp> alpha;
        private final MethodDescriptor<VReq, VResp> v1;

        ConvertingCall(
                ServerCall<AReq, AResp> call,
                MethodDescriptor<AReq, AResp> alpha,
                MethodDescriptor<VReq, VResp> v1) {
            this.call = call;
            this.alpha = alpha;
            this.v1 = v1;
        }

        @Override
        public void request(int numMessages) {
            call.request(numMessages);
        }

        @Override
        public void sendHeaders(Metadata headers) {
            call.sendHeaders(headers);
        }

        @Override
        public void sendMessage(VResp message) {
            call.sendMessage(alpha.parseResponse(v1.streamResponse(message)));
        }

        @Override
        public void close(Status status, Metadata trailers) {
            call.close(status, trailers);
        }

        @Override
        public boolean isCancelled() {
            return call.isCancelled();
        }

        @Override
        public boolean isReady() {
            return call.isReady();
        }

        @Override
        public void setMessageCompression(boolean enabled) {
            call.setMessageCompression(enabled);
        }

        @Override
        public void setCompression(String compressor) {
            call.setCompression(compressor);
        }

        @Override
        public Attributes getAttributes() {
            return call.getAttributes();
        }

        @Override
        public String getAuthority() {
            return call.getAuthority();
        }

        @Override
        public MethodDescriptor<VReq, VResp> getMethodDescriptor() {
            return v1;
        }
    }
}

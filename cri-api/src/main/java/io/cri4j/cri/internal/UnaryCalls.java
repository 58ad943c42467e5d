package io.cri4j.cri.internal;

import io.grpc.ClientCall;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;

/** A unary gRPC call as a {@link CompletableFuture}. Not API. */
public final class UnaryCalls {
    private UnaryCalls() {}

    /**
     * Starts {@code call} with {@code request}. The future completes with the answer on the call's
     * executor, fails with the call's error (a call that cannot start included), or, when the
     * call ends without a message, with {@code INTERNAL} "{@code peer} answered {@code rpc} with no
     * message". Cancelling the future cancels the call.
     */
    public static <Q, R> CompletableFuture<R> start(
            ClientCall<Q, R> call, Q request, String peer, String rpc) {
        CompletableFuture<R> answer = new CompletableFuture<>();
        answer.whenComplete(
                (r, e) -> {
                    if (answer.isCancelled()) {
                        call.cancel("the caller gave up on the call", null);
                    }
                });
        try {
            ClientCalls.asyncUnaryCall(
                    call,
                    request,
                    new StreamObserver<R>() {
                        @Override
                        public void onNext(R value) {
                            answer.complete(value);
                        }

                        @Override
                        public void onError(Throwable t) {
                            answer.completeExceptionally(t);
                        }

                        @Override
                        public void onCompleted() {
                            // no-op after onNext
                            answer.completeExceptionally(
                                    Status.INTERNAL
                                            .withDescription(
                                                    peer + " answered " + rpc + " with no message")
                                            .asRuntimeException());
                        }
                    });
        } catch (StatusRuntimeException | IllegalStateException e) {
            answer.completeExceptionally(e);
        }
        return answer;
    }
}

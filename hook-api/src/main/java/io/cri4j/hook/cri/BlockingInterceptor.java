package io.cri4j.hook.cri;

import io.cri4j.hook.internal.Statuses;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;

/**
 * A blocking {@link CriInterceptor} in the asynchronous form: each call runs on the worker, in the
 * gRPC context current when it was handed over; its {@code proceed} calls the rest of the chain
 * and waits for it there. See {@link CriInterceptor#async}.
 */
final class BlockingInterceptor implements AsyncCriInterceptor {
    private final CriInterceptor interceptor;
    private final Executor worker;

    BlockingInterceptor(CriInterceptor interceptor, Executor worker) {
        this.interceptor = interceptor;
        this.worker = worker;
    }

    /** The adapted interceptor. */
    CriInterceptor interceptor() {
        return interceptor;
    }

    @Override
    public boolean intercepts(MethodDescriptor<?, ?> method) {
        return interceptor.intercepts(method);
    }

    @Override
    public <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> chain) {
        CompletableFuture<R> result = new CompletableFuture<>();
        MethodDescriptor<Q, R> m = chain.method();
        Thread caller = Thread.currentThread();
        Runnable task =
                () -> {
                    try {
                        result.complete(
                                interceptor.interceptUnary(
                                        new CriInterceptor.UnaryChain<Q, R>() {
                                            @Override
                                            public MethodDescriptor<Q, R> method() {
                                                return m;
                                            }

                                            @Override
                                            public Q request() {
                                                return chain.request();
                                            }

                                            @Override
                                            public Metadata metadata() {
                                                return chain.metadata();
                                            }

                                            @Override
                                            public R proceed(Q request) throws StatusException {
                                                if (Thread.currentThread() == caller) {
                                                    // the worker ran it on the thread that called
                                                    // the adapter: waiting there for the
                                                    // rest of the chain, which runs on that thread
                                                    // too, would never end
                                                    throw Status.INTERNAL
                                                            .withDescription(
                                                                    "blocking interceptor "
                                                                            + interceptor
                                                                                    .getClass()
                                                                                    .getName()
                                                                            + " runs on the thread that called it on "
                                                                            + m.getFullMethodName()
                                                                            + "; give it an executor of other threads")
                                                            .asException();
                                                }
                                                return await(chain.proceed(request), m);
                                            }
                                        }));
                    } catch (Throwable t) {
                        result.completeExceptionally(Statuses.of(t, failedOn(m)));
                        if (t instanceof VirtualMachineError e) {
                            throw e;
                        }
                    }
                };
        StatusException rejected = submit(task, m);
        if (rejected != null) {
            result.completeExceptionally(rejected);
        }
        return result;
    }

    @Override
    public <Q, R> void interceptServerStreaming(AsyncCriInterceptor.StreamingChain<Q, R> chain) {
        MethodDescriptor<Q, R> m = chain.method();
        Runnable task =
                () -> {
                    try {
                        interceptor.interceptServerStreaming(
                                new CriInterceptor.StreamingChain<Q, R>() {
                                    @Override
                                    public MethodDescriptor<Q, R> method() {
                                        return m;
                                    }

                                    @Override
                                    public Q request() {
                                        return chain.request();
                                    }

                                    @Override
                                    public Metadata metadata() {
                                        return chain.metadata();
                                    }

                                    @Override
                                    public StreamObserver<R> responses() {
                                        return chain.responses();
                                    }

                                    @Override
                                    public void proceed(Q request, StreamObserver<R> responses) {
                                        chain.proceed(request, responses);
                                    }
                                });
                    } catch (RuntimeException e) {
                        chain.responses().onError(Statuses.of(e, failedOn(m)));
                    }
                };
        StatusException rejected = submit(task, m);
        if (rejected != null) {
            chain.responses().onError(rejected);
        }
    }

    private String failedOn(MethodDescriptor<?, ?> m) {
        return "interceptor "
                + interceptor.getClass().getName()
                + " failed on "
                + m.getFullMethodName();
    }

    /** Runs {@code task} on the worker in the current context; the status when it cannot. */
    private StatusException submit(Runnable task, MethodDescriptor<?, ?> m) {
        try {
            worker.execute(Context.current().wrap(task));
            return null;
        } catch (RejectedExecutionException e) {
            Status s =
                    worker instanceof ExecutorService es && es.isShutdown()
                            ? Status.UNAVAILABLE.withDescription(
                                    "the worker pool of interceptor "
                                            + interceptor.getClass().getName()
                                            + " is shut down; cannot run "
                                            + m.getFullMethodName())
                            : Status.RESOURCE_EXHAUSTED.withDescription(
                                    "no worker free for interceptor "
                                            + interceptor.getClass().getName()
                                            + " on "
                                            + m.getFullMethodName()
                                            + " (all busy and the queue full)");
            return s.withCause(e).asException();
        }
    }

    /** Waits on the worker for the rest of the chain. */
    private static <R> R await(CompletionStage<R> next, MethodDescriptor<?, ?> m)
            throws StatusException {
        if (next == null) {
            throw Status.INTERNAL
                    .withDescription(
                            "the rest of the chain of "
                                    + m.getFullMethodName()
                                    + " returned no stage")
                    .asException();
        }
        CompletableFuture<R> answer = new CompletableFuture<>();
        next.whenComplete(
                (v, e) -> {
                    if (e != null) {
                        answer.completeExceptionally(e);
                    } else {
                        answer.complete(v);
                    }
                });
        try {
            return answer.get();
        } catch (ExecutionException e) {
            throw Statuses.of(
                    e.getCause(), "the rest of the chain of " + m.getFullMethodName() + " failed");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Status.CANCELLED
                    .withDescription(
                            "interrupted while waiting for the rest of the"
                                    + " chain of "
                                    + m.getFullMethodName())
                    .asException();
        }
    }
}

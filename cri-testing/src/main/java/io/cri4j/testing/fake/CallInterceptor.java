package io.cri4j.testing.fake;

import com.google.protobuf.Message;
import io.grpc.Context;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Records every call and applies injected faults. The call is held (without blocking a thread) until its request
 * has arrived and been recorded; then a fault may fail it, delay it or park it, or it proceeds to the service.
 */
final class CallInterceptor implements ServerInterceptor {

    private final CallLog log;
    private final Faults faults;
    private final ScheduledExecutorService scheduler;
    private final Clock clock;

    CallInterceptor(CallLog log, Faults faults, ScheduledExecutorService scheduler, Clock clock) {
        this.log = log;
        this.faults = faults;
        this.scheduler = scheduler;
        this.clock = clock;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Gate<Q, R> gate = new Gate<>(call, headers, next, Context.current());
        call.request(1);
        return gate;
    }

    private final class Gate<Q, R> extends ServerCall.Listener<Q> {
        private final ServerCall<Q, R> call;
        private final Metadata headers;
        private final ServerCallHandler<Q, R> next;
        private final Context context;
        private final List<Runnable> buffered = new ArrayList<>();
        private RecordedCall recorded;
        private ServerCall.Listener<Q> delegate;
        private boolean closed;
        private Runnable parked;
        private Faults.Rule parkedRule;

        Gate(
                ServerCall<Q, R> call,
                Metadata headers,
                ServerCallHandler<Q, R> next,
                Context context) {
            this.call = call;
            this.headers = headers;
            this.next = next;
            this.context = context;
        }

        @Override
        public void onMessage(Q message) {
            Faults.Rule rule;
            synchronized (this) {
                if (recorded != null) {
                    deliver(l -> l.onMessage(message));
                    return;
                }
                recorded =
                        log.record(
                                call.getMethodDescriptor().getFullMethodName(),
                                (Message) message,
                                clock.instant());
                buffered.add(() -> delegate.onMessage(message));
                rule = faults.take(recorded.fullMethodName());
            }
            if (rule == null) {
                open();
                return;
            }
            switch (rule.kind()) {
                case FAIL -> fail(rule.status());
                case DELAY -> {
                    try {
                        scheduler.schedule(
                                () -> context.run(this::open),
                                rule.delay().toNanos(),
                                TimeUnit.NANOSECONDS);
                    } catch (RejectedExecutionException e) {
                        fail(
                                Status.UNAVAILABLE.withDescription(
                                        "fake CRI server is shutting down"));
                    }
                }
                case HANG -> {
                    Runnable proceed = () -> context.run(this::open);
                    synchronized (this) {
                        parked = proceed;
                        parkedRule = rule;
                    }
                    if (!rule.hang().park(proceed)) {
                        open();
                    }
                }
            }
        }

        private void fail(Status status) {
            synchronized (this) {
                if (closed) {
                    return;
                }
                closed = true;
            }
            recorded.complete(status);
            call.close(status, new Metadata());
        }

        private synchronized void open() {
            if (closed || delegate != null) {
                return;
            }
            ServerCall<Q, R> recording =
                    new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                        @Override
                        public void close(Status status, Metadata trailers) {
                            recorded.complete(status);
                            super.close(status, trailers);
                        }
                    };
            delegate = next.startCall(recording, headers);
            buffered.forEach(Runnable::run);
            buffered.clear();
        }

        private synchronized void deliver(
                java.util.function.Consumer<ServerCall.Listener<Q>> event) {
            if (closed && delegate == null) {
                return;
            }
            if (delegate == null) {
                buffered.add(() -> event.accept(delegate));
            } else {
                event.accept(delegate);
            }
        }

        @Override
        public void onHalfClose() {
            deliver(ServerCall.Listener::onHalfClose);
        }

        @Override
        public void onCancel() {
            synchronized (this) {
                if (delegate == null) {
                    closed = true;
                    if (recorded != null) {
                        recorded.complete(
                                Status.CANCELLED.withDescription("cancelled by the client"));
                    }
                    if (parked != null) {
                        parkedRule.hang().forget(parked);
                    }
                    return;
                }
            }
            deliver(ServerCall.Listener::onCancel);
        }

        @Override
        public void onComplete() {
            deliver(ServerCall.Listener::onComplete);
        }

        @Override
        public void onReady() {
            synchronized (this) {
                if (delegate != null) {
                    delegate.onReady();
                }
            }
        }
    }
}

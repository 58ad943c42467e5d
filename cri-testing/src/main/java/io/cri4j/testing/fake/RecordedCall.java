package io.cri4j.testing.fake;

import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import io.grpc.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One CRI call the fake received: which RPC, on which API version, with which request, and (once finished) with
 * which status it ended. Calls are recorded when their request arrives, before any injected fault acts.
 */
public final class RecordedCall {

    private final long sequence;
    private final String fullMethodName;
    private final Message request;
    private final Instant receivedAt;
    private final CompletableFuture<Status> outcome = new CompletableFuture<>();

    /**
     * Creates a record; see {@link CallLog}.
     *
     * @param sequence       1-based position among all calls of the server
     * @param fullMethodName e.g. {@code runtime.v1.RuntimeService/RunPodSandbox}
     * @param request        the request message
     * @param receivedAt     when the request arrived
     */
    RecordedCall(long sequence, String fullMethodName, Message request, Instant receivedAt) {
        this.sequence = sequence;
        this.fullMethodName = fullMethodName;
        this.request = request;
        this.receivedAt = receivedAt;
    }

    /** 1-based position among all calls the server received. */
    public long sequence() {
        return sequence;
    }

    /** The full gRPC method name, e.g. {@code runtime.v1.RuntimeService/RunPodSandbox}. */
    public String fullMethodName() {
        return fullMethodName;
    }

    /** The bare RPC name, e.g. {@code RunPodSandbox}. */
    public String method() {
        return fullMethodName.substring(fullMethodName.indexOf('/') + 1);
    }

    /** {@code RuntimeService} or {@code ImageService}. */
    public String service() {
        String service = fullMethodName.substring(0, fullMethodName.indexOf('/'));
        return service.substring(service.lastIndexOf('.') + 1);
    }

    /** {@code v1} or {@code v1alpha2}. */
    public String apiVersion() {
        String service = fullMethodName.substring(0, fullMethodName.indexOf('/'));
        String pkg = service.substring(0, service.lastIndexOf('.'));
        return pkg.substring(pkg.lastIndexOf('.') + 1);
    }

    /** The request message as received (a {@code io.cri4j.cri.v1} or {@code v1alpha2} message). */
    public Message request() {
        return request;
    }

    /**
     * The request as the given type.
     *
     * @throws ClassCastException naming both types when the request is of another type
     */
    public <T extends Message> T request(Class<T> type) {
        if (!type.isInstance(request)) {
            throw new ClassCastException(
                    fullMethodName
                            + " carried a "
                            + request.getClass().getName()
                            + ", not a "
                            + type.getName());
        }
        return type.cast(request);
    }

    /** When the request arrived. */
    public Instant receivedAt() {
        return receivedAt;
    }

    /** The status the call ended with, empty while it is still running (e.g. hanging). */
    public Optional<Status> status() {
        return Optional.ofNullable(outcome.getNow(null));
    }

    /**
     * Waits until the call has ended.
     *
     * @throws AssertionError when it has not ended within the timeout
     */
    public Status awaitStatus(Duration timeout) throws InterruptedException {
        try {
            return outcome.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(this + " did not finish within " + timeout);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    /** Records how the call ended; only the first status counts. */
    void complete(Status status) {
        outcome.complete(status);
    }

    @Override
    public String toString() {
        String text = TextFormat.printer().emittingSingleLine(true).printToString(request).trim();
        if (text.length() > 300) {
            text = text.substring(0, 297) + "...";
        }
        Status s = outcome.getNow(null);
        return "#"
                + sequence
                + " "
                + fullMethodName
                + " {"
                + text
                + "} -> "
                + (s == null
                        ? "(running)"
                        : s.getCode()
                                + (s.getDescription() == null ? "" : ": " + s.getDescription()));
    }
}

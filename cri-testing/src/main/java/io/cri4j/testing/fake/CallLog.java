package io.cri4j.testing.fake;

import com.google.protobuf.Message;
import io.cri4j.testing.fake.internal.MethodMatcher;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Every CRI call the fake received, in arrival order, with assertions whose failure messages list the calls.
 * Method names are written as for {@link Faults#on(String)}: {@code "RunPodSandbox"} matches both API versions.
 */
public final class CallLog {

    /** A fake's log, empty; a test reaches it through {@code FakeCriServer.calls()}. */
    CallLog() {}

    private final List<RecordedCall> calls = new ArrayList<>();

    private long sequence;

    /** Records a call that just arrived; used by the fake's interceptor. */
    synchronized RecordedCall record(String fullMethodName, Message request, Instant receivedAt) {
        RecordedCall call = new RecordedCall(++sequence, fullMethodName, request, receivedAt);
        calls.add(call);
        notifyAll();
        return call;
    }

    /** Forgets all recorded calls. */
    public synchronized void clear() {
        calls.clear();
    }

    /** All calls so far, oldest first. */
    public synchronized List<RecordedCall> all() {
        return List.copyOf(calls);
    }

    /** The calls of one method, oldest first. */
    public synchronized List<RecordedCall> of(String method) {
        MethodMatcher m = MethodMatcher.of(method);
        return calls.stream().filter(c -> m.matches(c.fullMethodName())).toList();
    }

    /** The bare method names of all calls, oldest first, e.g. {@code [Version, RunPodSandbox]}. */
    public synchronized List<String> methods() {
        return calls.stream().map(RecordedCall::method).toList();
    }

    /** The requests of the given message type, oldest first, e.g. {@code requests(CreateContainerRequest.class)}. */
    public synchronized <T extends Message> List<T> requests(Class<T> type) {
        return calls.stream()
                .map(RecordedCall::request)
                .filter(type::isInstance)
                .map(type::cast)
                .toList();
    }

    /**
     * The newest request of the given type.
     *
     * @throws AssertionError when there is none
     */
    public synchronized <T extends Message> T lastRequest(Class<T> type) {
        List<T> all = requests(type);
        if (all.isEmpty()) {
            throw new AssertionError(
                    "no " + type.getSimpleName() + " was received; calls:" + describe());
        }
        return all.get(all.size() - 1);
    }

    /** How many calls of the method were received. */
    public int count(String method) {
        return of(method).size();
    }

    /** Asserts the method was called at least once. */
    public void assertCalled(String method) {
        if (count(method) == 0) {
            throw new AssertionError("expected a call of " + method + "; calls:" + describe());
        }
    }

    /** Asserts the method was never called. */
    public void assertNotCalled(String method) {
        if (count(method) != 0) {
            throw new AssertionError("expected no call of " + method + "; calls:" + describe());
        }
    }

    /** Asserts the method was called exactly {@code times} times. */
    public void assertCalledTimes(String method, int times) {
        int n = count(method);
        if (n != times) {
            throw new AssertionError(
                    "expected "
                            + times
                            + " call(s) of "
                            + method
                            + ", got "
                            + n
                            + "; calls:"
                            + describe());
        }
    }

    /** Asserts the methods were called in this order (other calls may come in between). */
    public void assertInOrder(String... methods) {
        List<MethodMatcher> wanted = Arrays.stream(methods).map(MethodMatcher::of).toList();
        int next = 0;
        for (RecordedCall c : all()) {
            if (next < wanted.size() && wanted.get(next).matches(c.fullMethodName())) {
                next++;
            }
        }
        if (next < wanted.size()) {
            throw new AssertionError(
                    "expected calls in order "
                            + Arrays.toString(methods)
                            + " but "
                            + methods[next]
                            + " did not follow; calls:"
                            + describe());
        }
    }

    /** Asserts exactly these methods were called, in this order, and nothing else. */
    public void assertExactly(String... methods) {
        List<RecordedCall> all = all();
        boolean ok = all.size() == methods.length;
        for (int i = 0; ok && i < methods.length; i++) {
            ok = MethodMatcher.of(methods[i]).matches(all.get(i).fullMethodName());
        }
        if (!ok) {
            throw new AssertionError(
                    "expected exactly " + Arrays.toString(methods) + "; calls:" + describe());
        }
    }

    /**
     * Waits until the method has been called {@code times} times in total and returns the call that made it so.
     *
     * @throws AssertionError when that does not happen within the timeout
     */
    public synchronized RecordedCall await(String method, int times, Duration timeout)
            throws InterruptedException {
        MethodMatcher m = MethodMatcher.of(method);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<RecordedCall> matching =
                    calls.stream().filter(c -> m.matches(c.fullMethodName())).toList();
            if (matching.size() >= times) {
                return matching.get(times - 1);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError(
                        "expected "
                                + times
                                + " call(s) of "
                                + method
                                + " within "
                                + timeout
                                + ", got "
                                + matching.size()
                                + "; calls:"
                                + describe());
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
    }

    /** Waits for the first call of the method. */
    public RecordedCall await(String method, Duration timeout) throws InterruptedException {
        return await(method, 1, timeout);
    }

    private String describe() {
        List<RecordedCall> all = all();
        return all.isEmpty()
                ? " (none)"
                : all.stream().map(c -> "\n  " + c).collect(Collectors.joining());
    }

    @Override
    public String toString() {
        return "CallLog" + describe();
    }
}

package io.cri4j.testing.fake;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A handle on calls made to hang by {@link Faults.MethodFaults#hang()}: they wait (no thread is blocked) until
 * {@link #release()}, then proceed normally. A client deadline or cancellation ends a hanging call as usual.
 */
public final class Hang {

    private final String method;
    private final List<Runnable> waiting = new ArrayList<>();
    private int arrived;
    private boolean released;

    Hang(String method) {
        this.method = method;
    }

    /**
     * Parks a call; used by the fake's interceptor.
     *
     * @return false when the hang was already released and the call should proceed at once
     */
    synchronized boolean park(Runnable proceed) {
        if (released) {
            return false;
        }
        arrived++;
        waiting.add(proceed);
        notifyAll();
        return true;
    }

    /** Forgets a parked call that was cancelled; used by the fake's interceptor. */
    synchronized void forget(Runnable proceed) {
        waiting.remove(proceed);
    }

    /** How many calls have hung here so far (released or not). */
    public synchronized int hungCalls() {
        return arrived;
    }

    /**
     * Waits until at least {@code calls} calls hang here.
     *
     * @throws AssertionError when they do not arrive within the timeout
     */
    public synchronized void awaitHanging(int calls, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (arrived < calls) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError(
                        "expected "
                                + calls
                                + " hanging "
                                + method
                                + " call(s) within "
                                + timeout
                                + ", saw "
                                + arrived);
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
    }

    /** Lets every parked call proceed, and every later call pass without hanging. Idempotent. */
    public void release() {
        List<Runnable> toRun;
        synchronized (this) {
            released = true;
            toRun = new ArrayList<>(waiting);
            waiting.clear();
        }
        toRun.forEach(Runnable::run);
    }

    /** Whether {@link #release()} was called. */
    public synchronized boolean released() {
        return released;
    }

    @Override
    public String toString() {
        return "Hang[" + method + ", hung=" + hungCalls() + ", released=" + released() + "]";
    }
}

package io.cri4j.testing.real.internal;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/** Polls a condition until it holds or a deadline passes (readiness of external processes). */
public final class Await {

    /** A check that may throw; {@code true} means done. */
    @FunctionalInterface
    public interface Check {
        boolean done() throws Exception;
    }

    private Await() {}

    /**
     * Calls {@code check} until it returns {@code true}, backing off from 5 ms to 50 ms between
     * attempts. Exceptions thrown by the check count as "not yet" and the last one becomes the
     * cause of the {@link TimeoutException}, except {@link DaemonExitedException}, which ends the
     * wait at once.
     */
    public static void until(String what, Duration timeout, Check check)
            throws TimeoutException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        long pauseNanos = TimeUnit.MILLISECONDS.toNanos(5);
        Exception last = null;
        while (true) {
            try {
                if (check.done()) {
                    return;
                }
                last = null;
            } catch (InterruptedException | DaemonExitedException e) {
                throw e;
            } catch (Exception e) {
                last = e;
            }
            if (System.nanoTime() - deadline > 0) {
                TimeoutException timeoutException =
                        new TimeoutException(
                                what + " did not happen within " + timeout.toMillis() + " ms");
                if (last != null) {
                    timeoutException.initCause(last);
                }
                throw timeoutException;
            }
            LockSupport.parkNanos(pauseNanos);
            if (Thread.interrupted()) {
                throw new InterruptedException("interrupted while waiting until " + what);
            }
            pauseNanos = Math.min(pauseNanos * 2, TimeUnit.MILLISECONDS.toNanos(50));
        }
    }
}

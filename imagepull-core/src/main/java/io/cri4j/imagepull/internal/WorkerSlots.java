package io.cri4j.imagepull.internal;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.Executor;

/**
 * The worker pool: at most {@code size} attempts run at once; others wait in FIFO order.
 * Grants run on the given executor, never under the caller's locks.
 */
public final class WorkerSlots {

    private final int size;
    private final Executor executor;
    private final Deque<Runnable> waiting = new ArrayDeque<>();
    private int busy;

    /**
     * @param size maximum concurrent holders
     * @param executor where grants run
     */
    public WorkerSlots(int size, Executor executor) {
        this.size = size;
        this.executor = executor;
    }

    /**
     * Asks for a slot; {@code onGranted} runs when one is free (the caller then owns it).
     *
     * @param onGranted what to run with the slot
     */
    public void acquire(Runnable onGranted) {
        synchronized (this) {
            if (busy >= size) {
                waiting.addLast(onGranted);
                return;
            }
            busy++;
        }
        executor.execute(onGranted);
    }

    /**
     * Withdraws a waiting request.
     *
     * @param onGranted the request given to {@link #acquire(Runnable)}
     * @return true when it was still waiting (so it holds no slot)
     */
    public synchronized boolean withdraw(Runnable onGranted) {
        return waiting.remove(onGranted);
    }

    /** Returns a slot, granting it to the next waiter if any. */
    public void release() {
        Runnable next;
        synchronized (this) {
            next = waiting.pollFirst();
            if (next == null) {
                busy--;
                return;
            }
        }
        executor.execute(next);
    }

    /** @return slots in use */
    public synchronized int busy() {
        return busy;
    }

    /** @return requests waiting */
    public synchronized int waiting() {
        return waiting.size();
    }
}

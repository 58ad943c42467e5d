package io.cri4j.imagepull;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/** Virtual time for tests: tasks run only when the test advances the clock. */
final class VirtualScheduler implements PullScheduler {

    private final class Task implements Comparable<Task>, Cancellable {
        final Instant due;
        final long seq;
        final Runnable run;
        final Duration delay;
        boolean cancelled;

        Task(Instant due, long seq, Runnable run, Duration delay) {
            this.due = due;
            this.seq = seq;
            this.run = run;
            this.delay = delay;
        }

        @Override
        public int compareTo(Task o) {
            int c = due.compareTo(o.due);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }

        @Override
        public void cancel() {
            synchronized (VirtualScheduler.this) {
                cancelled = true;
                queue.remove(this);
            }
        }
    }

    private final PriorityQueue<Task> queue = new PriorityQueue<>();
    private Instant now = Instant.parse("2026-01-01T00:00:00Z");
    private long seq;

    @Override
    public synchronized Instant now() {
        return now;
    }

    @Override
    public synchronized Cancellable schedule(Duration delay, Runnable task) {
        Task t = new Task(now.plus(delay), seq++, task, delay);
        queue.add(t);
        notifyAll();
        return t;
    }

    /** @return delays of tasks scheduled and not yet run or cancelled, in due order */
    synchronized List<Duration> pendingDelays() {
        List<Task> sorted = new ArrayList<>(queue);
        sorted.sort(null);
        return sorted.stream().map(t -> t.delay).toList();
    }

    /** Waits (really) until some pending task has exactly this delay. */
    synchronized void awaitPending(Duration delay) throws InterruptedException {
        long end = System.nanoTime() + 5_000_000_000L;
        while (queue.stream().noneMatch(t -> t.delay.equals(delay))) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError(
                        "no task with delay "
                                + delay
                                + " was scheduled; pending "
                                + pendingDelays());
            }
            wait(left / 1_000_000 + 1);
        }
    }

    /** Advances the clock, running due tasks in order on this thread. */
    void advance(Duration d) {
        Instant target;
        synchronized (this) {
            target = now.plus(d);
        }
        while (true) {
            Task next;
            synchronized (this) {
                next = queue.peek();
                if (next == null || next.due.isAfter(target)) {
                    now = target;
                    return;
                }
                queue.poll();
                now = next.due;
            }
            next.run.run();
        }
    }
}

package io.cri4j.imagepull;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** Records a job's progress snapshots and waits for one matching a condition. */
final class ProgressWatch {

    final List<PullProgress> all = new CopyOnWriteArrayList<>();
    private final LinkedBlockingQueue<PullProgress> queue = new LinkedBlockingQueue<>();

    ProgressWatch(PullJob job) {
        job.onProgress(
                p -> {
                    all.add(p);
                    queue.add(p);
                });
    }

    PullProgress await(String what, Predicate<PullProgress> condition) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            long left = end - System.nanoTime();
            PullProgress p = left <= 0 ? null : queue.poll(left, TimeUnit.NANOSECONDS);
            if (p == null) {
                throw new AssertionError(
                        "no progress with "
                                + what
                                + " within 10 s; last: "
                                + (all.isEmpty() ? "none" : all.get(all.size() - 1)));
            }
            if (condition.test(p)) {
                return p;
            }
        }
    }

    void assertMonotonic() {
        int prev = Integer.MIN_VALUE;
        for (PullProgress p : all) {
            if (p.percent() < prev) {
                throw new AssertionError(
                        "percent went back from " + prev + " to " + p.percent() + " in " + all);
            }
            prev = p.percent();
        }
    }
}

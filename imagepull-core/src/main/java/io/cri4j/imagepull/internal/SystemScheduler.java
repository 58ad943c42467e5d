package io.cri4j.imagepull.internal;

import io.cri4j.imagepull.PullScheduler;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/** The default scheduler: system clock and one daemon timer thread, closed with the puller. */
public final class SystemScheduler implements PullScheduler, AutoCloseable {

    private final ScheduledThreadPoolExecutor timer;

    /** @param threadName name of the timer thread */
    public SystemScheduler(String threadName) {
        timer =
                new ScheduledThreadPoolExecutor(
                        1,
                        r -> {
                            Thread t = new Thread(r, threadName);
                            t.setDaemon(true);
                            return t;
                        });
        timer.setRemoveOnCancelPolicy(true);
    }

    @Override
    public Instant now() {
        return Instant.now();
    }

    @Override
    public Cancellable schedule(Duration delay, Runnable task) {
        // a delay beyond what nanoseconds hold (about 292 years) is as good as never
        long nanos =
                delay.toSeconds() >= Long.MAX_VALUE / 1_000_000_000L - 1
                        ? Long.MAX_VALUE
                        : Math.max(0, delay.toNanos());
        ScheduledFuture<?> f = timer.schedule(task, nanos, TimeUnit.NANOSECONDS);
        return () -> f.cancel(false);
    }

    @Override
    public void close() {
        timer.shutdownNow();
        try {
            timer.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package io.cri4j.hook.internal;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * A readers-writer gate for asynchronous work that never blocks a thread: any number of shared
 * sections run at once; an exclusive one runs alone, after the shared ones in progress, and shared
 * sections that arrive while it waits or runs wait for it (so it is never starved). A waiting
 * section's work starts on the thread that ends the last section before it.
 */
public final class AsyncGate {
    private final Deque<Waiter<?>> waiting = new ArrayDeque<>();
    private int shared;
    private boolean exclusive;

    private record Waiter<T>(
            boolean exclusive, Supplier<CompletionStage<T>> work, CompletableFuture<T> result) {
        void start(AsyncGate gate) {
            CompletionStage<T> stage;
            try {
                stage = work.get();
            } catch (RuntimeException e) {
                stage = CompletableFuture.failedFuture(e);
            }
            stage.whenComplete(
                    (v, t) -> {
                        gate.release(exclusive);
                        if (t != null) {
                            result.completeExceptionally(t);
                        } else {
                            result.complete(v);
                        }
                    });
        }
    }

    /** Runs {@code work} beside other shared sections, once no exclusive one runs or waits. */
    public <T> CompletionStage<T> shared(Supplier<CompletionStage<T>> work) {
        return enter(new Waiter<>(false, work, new CompletableFuture<>()));
    }

    /** Runs {@code work} alone, once the sections in progress are done. */
    public <T> CompletionStage<T> exclusive(Supplier<CompletionStage<T>> work) {
        return enter(new Waiter<>(true, work, new CompletableFuture<>()));
    }

    /** Whether an exclusive section runs or waits now (for tests and diagnostics). */
    public synchronized boolean exclusivePending() {
        return exclusive || waiting.stream().anyMatch(Waiter::exclusive);
    }

    private <T> CompletionStage<T> enter(Waiter<T> w) {
        boolean now;
        synchronized (this) {
            if (w.exclusive) {
                now = !exclusive && shared == 0 && waiting.isEmpty();
                if (now) {
                    exclusive = true;
                }
            } else {
                now = !exclusive && waiting.isEmpty();
                if (now) {
                    shared++;
                }
            }
            if (!now) {
                waiting.add(w);
            }
        }
        if (now) {
            w.start(this);
        }
        return w.result;
    }

    private void release(boolean wasExclusive) {
        Deque<Waiter<?>> start = new ArrayDeque<>();
        synchronized (this) {
            if (wasExclusive) {
                exclusive = false;
            } else {
                shared--;
            }
            while (!waiting.isEmpty() && !exclusive) {
                Waiter<?> next = waiting.peek();
                if (next.exclusive) {
                    if (shared > 0 || !start.isEmpty()) {
                        break;
                    }
                    exclusive = true;
                } else {
                    shared++;
                }
                start.add(waiting.poll());
            }
        }
        start.forEach(w -> w.start(this));
    }
}

package io.cri4j.imagepull;

import java.util.List;
import java.util.concurrent.TimeUnit;

/** Checks that no thread of ours outlives a closed puller or backend. */
final class Threads {

    private Threads() {}

    static List<String> ours() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(n -> n.startsWith("cri4j-imagepull"))
                .sorted()
                .toList();
    }

    /** Waits up to 5 s for every thread named cri4j-imagepull* to end. */
    static void assertNoneLeft() throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("cri4j-imagepull")) {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime())));
            }
        }
        List<String> left = ours();
        if (!left.isEmpty()) {
            throw new AssertionError("threads left running after close: " + left);
        }
    }
}

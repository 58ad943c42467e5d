package io.cri4j.streaming.internal.io;

import io.netty.channel.Channel;
import java.util.concurrent.RejectedExecutionException;

/** Runs tasks on a channel's event loop, tolerating a loop that already shut down. */
public final class Loops {
    private Loops() {}

    /** Runs {@code r} now when on the loop, else schedules it; false when the loop is gone. */
    public static boolean run(Channel ch, Runnable r) {
        if (ch.eventLoop().inEventLoop()) {
            r.run();
            return true;
        }
        try {
            ch.eventLoop().execute(r);
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }
}

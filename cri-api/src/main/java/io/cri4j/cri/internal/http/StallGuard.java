package io.cri4j.cri.internal.http;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes a connection whose written bytes stop leaving: when writes are pending and none of them
 * completes (reaches the socket) for the stall timeout, the peer reads nothing and is dropped. Any
 * completed write restarts the clock; no pending write stops it.
 */
final class StallGuard extends ChannelDuplexHandler {
    private static final Logger LOG = LoggerFactory.getLogger(StallGuard.class);

    private final long nanos;
    private long pending;
    private ScheduledFuture<?> timer;

    StallGuard(long nanos) {
        this.nanos = nanos;
    }

    @Override
    public void write(ChannelHandlerContext c, Object msg, ChannelPromise promise)
            throws Exception {
        if (pending++ == 0) {
            arm(c);
        }
        ChannelPromise p = promise.unvoid();
        p.addListener(
                (ChannelFutureListener)
                        f -> {
                            if (--pending == 0) {
                                cancel();
                            } else {
                                arm(c); // progress: the peer took bytes
                            }
                        });
        super.write(c, msg, p);
    }

    private void arm(ChannelHandlerContext c) {
        cancel();
        timer =
                c.executor()
                        .schedule(
                                () -> {
                                    LOG.debug(
                                            "HTTP connection {} took none of its response for {} ms; closing",
                                            c.channel().remoteAddress(),
                                            TimeUnit.NANOSECONDS.toMillis(nanos));
                                    c.close();
                                },
                                nanos,
                                TimeUnit.NANOSECONDS);
    }

    private void cancel() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) throws Exception {
        cancel();
        super.channelInactive(c);
    }
}

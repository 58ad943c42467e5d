package io.cri4j.cri.internal.http;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes a connection whose next request is not complete within a fixed time from when the
 * connection opened or its previous response ended. Bytes that trickle in do not extend it (unlike a
 * read-idle timeout); while a request is being answered (a stream included) the clock is stopped.
 * Sits after the HTTP codec, where the responses written are still HTTP objects.
 */
final class RequestDeadline extends ChannelDuplexHandler {
    private static final Logger LOG = LoggerFactory.getLogger(RequestDeadline.class);

    private final long nanos;
    private ScheduledFuture<?> timer;

    RequestDeadline(long nanos) {
        this.nanos = nanos;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext c) {
        if (c.channel().isActive()) {
            arm(c);
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext c) throws Exception {
        if (timer == null) {
            arm(c);
        }
        super.channelActive(c);
    }

    private void arm(ChannelHandlerContext c) {
        cancel();
        timer =
                c.executor()
                        .schedule(
                                () -> {
                                    LOG.debug(
                                            "HTTP connection {} sent no complete request within {} ms; closing",
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

    /** The guard read a whole request: the clock stops until its response has ended. */
    void requestRead() {
        cancel();
    }

    @Override
    public void write(ChannelHandlerContext c, Object msg, ChannelPromise promise)
            throws Exception {
        if (msg instanceof LastHttpContent) {
            promise.addListener(
                    (ChannelFutureListener)
                            f -> {
                                if (f.isSuccess() && f.channel().isActive()) {
                                    arm(c);
                                }
                            });
        }
        super.write(c, msg, promise);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext c) {
        cancel();
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) throws Exception {
        cancel();
        super.channelInactive(c);
    }
}

package io.cri4j.streaming.internal;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes an HTTP connection whose request is not complete within a fixed time from when the
 * connection opened (or its previous request was read). Unlike a read-idle timeout, bytes that
 * trickle in do not extend it: a client sending one byte a second is cut off, as Go's
 * {@code http.Server.ReadHeaderTimeout} cuts it off. Removed once the connection is upgraded.
 */
public final class RequestDeadline extends ChannelInboundHandlerAdapter {
    /** Its name in the pipeline. */
    public static final String NAME = "request-deadline";

    private static final Logger LOG = LoggerFactory.getLogger(RequestDeadline.class);

    private final long nanos;
    private ScheduledFuture<?> timer;

    /** @param nanos the time a request may take */
    public RequestDeadline(long nanos) {
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
                                            "connection {} sent no complete request within {} ms; closing",
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
    public void handlerRemoved(ChannelHandlerContext c) {
        cancel();
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) throws Exception {
        cancel();
        super.channelInactive(c);
    }

    /** A request was read: the next one on this connection gets the full time again. */
    static void requestRead(ChannelPipeline p) {
        ChannelHandlerContext c = p.context(NAME);
        if (c != null) {
            ((RequestDeadline) c.handler()).arm(c);
        }
    }

    /** The connection was upgraded: no more HTTP requests on it. */
    static void remove(ChannelPipeline p) {
        if (p.get(NAME) != null) {
            p.remove(NAME);
        }
    }
}

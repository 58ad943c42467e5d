package io.cri4j.cri.internal.http;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes a connection whose next request is not complete within a fixed time from when the
 * connection opened or its previous response ended. Bytes that trickle in do not extend it (unlike a
 * read-idle timeout); while a request is being answered (a stream included) the clock is stopped.
 * Sits after the HTTP codec, where the responses written are still HTTP objects, under {@link
 * #NAME}. Go's {@code http.Server.ReadHeaderTimeout} cuts a slow client off the same way.
 */
public final class RequestDeadline extends ChannelDuplexHandler {
    /** Its name in a pipeline. */
    public static final String NAME = "request-deadline";

    private static final Logger LOG = LoggerFactory.getLogger(RequestDeadline.class);

    private final long nanos;
    private ScheduledFuture<?> timer;

    /**
     * @param nanos the time a request may take to arrive
     */
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
                                            "HTTP connection {} sent no complete request within {} ms; closing",
                                            c.channel().remoteAddress(),
                                            TimeUnit.NANOSECONDS.toMillis(nanos));
                                    hangUp(c);
                                },
                                nanos,
                                TimeUnit.NANOSECONDS);
    }

    /**
     * FIN first, then the close: a client still sending reads the end of the stream rather than a
     * reset (closing a socket with unread input makes the kernel answer with RST at once).
     */
    private static void hangUp(ChannelHandlerContext c) {
        if (c.channel() instanceof DuplexChannel d) {
            d.shutdownOutput().addListener(f -> c.close());
        } else {
            c.close();
        }
    }

    private void cancel() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }

    /**
     * A whole request was read from the connection of {@code p}: the clock stops until its
     * response has ended. Does nothing on a pipeline without the deadline.
     */
    public static void requestRead(ChannelPipeline p) {
        if (p.get(NAME) instanceof RequestDeadline d) {
            d.cancel();
        }
    }

    /** The connection of {@code p} was upgraded to another protocol: no more HTTP requests. */
    public static void remove(ChannelPipeline p) {
        if (p.get(NAME) != null) {
            p.remove(NAME);
        }
    }

    @Override
    public void write(ChannelHandlerContext c, Object msg, ChannelPromise promise)
            throws Exception {
        if (msg instanceof LastHttpContent) {
            promise.addListener(
                    (ChannelFutureListener)
                            f -> {
                                if (f.isSuccess() && f.channel().isActive() && !c.isRemoved()) {
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

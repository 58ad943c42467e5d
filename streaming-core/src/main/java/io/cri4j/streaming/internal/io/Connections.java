package io.cri4j.streaming.internal.io;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.socket.DuplexChannel;
import java.util.concurrent.TimeUnit;

/** Closing upgraded connections without losing data that is still on its way to the client. */
public final class Connections {
    /** How long a half-closed connection waits for the peer's FIN before a hard close. */
    public static final long LINGER_MILLIS = 5000;

    private Connections() {}

    /**
     * Writes {@code last} (a message the pipeline can encode, e.g. GOAWAY or a WebSocket close) after everything already queued, then half-closes the
     * output so the client reads all data and EOF, and closes fully when the client closed its side
     * or after {@link #LINGER_MILLIS}. Closing immediately could make the kernel answer late client
     * bytes with RST, which can discard output the client has not read yet.
     */
    public static void finish(Channel ch, Object last) {
        java.util.Objects.requireNonNull(last, "last");
        Runnable go =
                () -> {
                    if (!ch.isActive()) {
                        io.netty.util.ReferenceCountUtil.release(last);
                        ch.close();
                        return;
                    }
                    ChannelFutureListener afterWrite =
                            f -> {
                                if (ch instanceof DuplexChannel dc && f.isSuccess()) {
                                    dc.shutdownOutput()
                                            .addListener(
                                                    s -> {
                                                        if (!s.isSuccess()) {
                                                            ch.close();
                                                            return;
                                                        }
                                                        ch.config().setAutoRead(true);
                                                        ch.read();
                                                        ch.eventLoop()
                                                                .schedule(
                                                                        () -> {
                                                                            ch.close();
                                                                        },
                                                                        LINGER_MILLIS,
                                                                        TimeUnit.MILLISECONDS);
                                                    });
                                } else {
                                    ch.close();
                                }
                            };
                    ch.writeAndFlush(last).addListener(afterWrite);
                };
        if (!Loops.run(ch, go)) {
            io.netty.util.ReferenceCountUtil.release(last);
        }
    }
}

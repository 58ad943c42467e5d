package io.cri4j.streaming.internal.remotecommand;

import io.cri4j.streaming.internal.Protocols;
import io.cri4j.streaming.internal.ServerContext;
import io.cri4j.streaming.internal.spdy.SpdySession;
import io.cri4j.streaming.internal.spdy.SpdyStream;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Server side of remotecommand over SPDY (kubelet's createHTTPStreamStreams + protocol handlers):
 * waits for the client's error/stdin/stdout/stderr(/resize from v3) streams, replying to each,
 * then runs the command. v5 is served as v4 (the CLOSE signal is WebSocket only).
 */
public final class SpdyRemoteCommand implements SpdySession.Handler {
    private static final Logger LOG = LoggerFactory.getLogger(SpdyRemoteCommand.class);

    private final ServerContext ctx;
    private final CommandRequest req;
    private final int version;
    private final int expected;
    private SpdySession session;
    private SpdyStream error;
    private SpdyStream stdin;
    private SpdyStream stdout;
    private SpdyStream stderr;
    private SpdyStream resize;
    private int received;
    private boolean started;
    private ScheduledFuture<?> timeout;
    private final SizeQueue sizes = new SizeQueue();
    private SessionStreams streams;
    private final Runnable onDone;

    public SpdyRemoteCommand(
            ServerContext ctx, CommandRequest req, String protocol, Runnable onDone) {
        this.ctx = ctx;
        this.req = req;
        this.version = Protocols.version(protocol);
        this.onDone = onDone;
        int n = 1;
        n += req.stdin() ? 1 : 0;
        n += req.stdout() ? 1 : 0;
        n += req.stderr() ? 1 : 0;
        n += req.tty() && version >= 3 ? 1 : 0;
        this.expected = n;
    }

    /** Binds to the session and starts the stream creation timer (on the event loop). */
    public void attach(SpdySession s) {
        this.session = s;
        long ms = ctx.streamCreationTimeout().toMillis();
        timeout =
                s.channel()
                        .eventLoop()
                        .schedule(
                                () -> {
                                    if (!started) {
                                        LOG.info(
                                                "timed out waiting for client to create streams ({} of {}) from {}",
                                                received,
                                                expected,
                                                s.channel().remoteAddress());
                                        s.close();
                                    }
                                },
                                ms,
                                TimeUnit.MILLISECONDS);
    }

    @Override
    public void onStream(SpdyStream s) {
        if (started) {
            s.reset();
            return;
        }
        String type = s.header(Protocols.STREAM_TYPE);
        boolean ok = true;
        if (type == null) {
            ok = false;
        } else {
            switch (type) {
                case Protocols.TYPE_ERROR -> ok = error == null && (error = s) != null;
                case Protocols.TYPE_STDIN -> ok = stdin == null && (stdin = s) != null;
                case Protocols.TYPE_STDOUT -> ok = stdout == null && (stdout = s) != null;
                case Protocols.TYPE_STDERR -> ok = stderr == null && (stderr = s) != null;
                case Protocols.TYPE_RESIZE -> {
                    ok = version >= 3 && resize == null && (resize = s) != null;
                    if (ok && req.tty()) {
                        // Listen now: the client may send the first size as soon as it has our
                        // reply.
                        ResizeDecoder dec = new ResizeDecoder(sizes::add, sizes::end);
                        s.listen(dec::feed);
                    }
                }
                default -> ok = false;
            }
        }
        if (!ok) {
            LOG.debug("unexpected or duplicate stream type {}", type);
            s.reset();
            return;
        }
        s.reply();
        received++;
        if (received == expected) {
            start();
        }
    }

    private void start() {
        started = true;
        timeout.cancel(false);
        if (version == 1 && stdin != null) {
            stdin.closeOutput(); // v1: the server closes its side of stdin right away
        }
        if (resize == null || !req.tty()) {
            sizes.end();
        }
        streams =
                new SessionStreams(
                        req.stdin() && stdin != null ? stdin.input() : null,
                        req.stdout() && stdout != null ? stdout.output() : null,
                        req.stderr() && stderr != null ? stderr.output() : null,
                        req.tty(),
                        sizes);
        if (session.closeFuture().isDone()) {
            streams.markClosed();
        }
        session.closeFuture().whenComplete((v, t) -> streams.markClosed());
        CommandRunner.start(ctx, req, streams, this::writeStatus, session::close);
    }

    private void writeStatus(StatusJson status) throws java.io.IOException {
        if (error == null) {
            return;
        }
        String body = version >= 4 ? status.toJson() : status.toText();
        if (!body.isEmpty()) {
            error.output().write(body.getBytes(StandardCharsets.UTF_8));
        }
        error.closeOutput();
    }

    @Override
    public void onClose() {
        if (timeout != null) {
            timeout.cancel(false);
        }
        sizes.end();
        if (streams != null) {
            streams.markClosed();
        }
        onDone.run();
    }
}

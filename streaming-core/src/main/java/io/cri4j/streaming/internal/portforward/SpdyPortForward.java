package io.cri4j.streaming.internal.portforward;

import io.cri4j.streaming.internal.Protocols;
import io.cri4j.streaming.internal.ServerContext;
import io.cri4j.streaming.internal.spdy.SpdySession;
import io.cri4j.streaming.internal.spdy.SpdyStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Server side of port-forward over SPDY (kubelet's httpStreamHandler): every forwarded connection
 * is a pair of client streams (data, error) with the same {@code port} header, paired by the
 * {@code requestID} header or, for old clients without it, by stream id (error id, data id - 2).
 */
public final class SpdyPortForward implements SpdySession.Handler {
    private static final Logger LOG = LoggerFactory.getLogger(SpdyPortForward.class);

    private final ServerContext ctx;
    private final String podSandboxId;
    private final Runnable onDone;
    private final Map<String, Pair> pairs = new HashMap<>();
    private final java.util.Set<PortStreamImpl> active =
            java.util.concurrent.ConcurrentHashMap.newKeySet();
    private SpdySession session;

    private static final class Pair {
        final String requestId;
        SpdyStream data;
        SpdyStream error;

        Pair(String requestId) {
            this.requestId = requestId;
        }
    }

    public SpdyPortForward(ServerContext ctx, String podSandboxId, Runnable onDone) {
        this.ctx = ctx;
        this.podSandboxId = podSandboxId;
        this.onDone = onDone;
    }

    public void attach(SpdySession s) {
        this.session = s;
    }

    @Override
    public void onStream(SpdyStream s) {
        String portString = s.header(Protocols.PORT);
        String type = s.header(Protocols.STREAM_TYPE);
        int port;
        try {
            port = portString == null ? -1 : Integer.parseInt(portString);
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 1
                || port > 65535
                || !(Protocols.TYPE_DATA.equals(type) || Protocols.TYPE_ERROR.equals(type))) {
            LOG.debug(
                    "rejecting port-forward stream {}: port {} type {}", s.id(), portString, type);
            s.reset();
            return;
        }
        s.reply();
        String requestId = s.header(Protocols.REQUEST_ID);
        if (requestId == null || requestId.isEmpty()) {
            requestId = Integer.toString(Protocols.TYPE_ERROR.equals(type) ? s.id() : s.id() - 2);
        }
        Pair p = pairs.get(requestId);
        if (p == null) {
            Pair created = new Pair(requestId);
            pairs.put(requestId, created);
            p = created;
            session.channel()
                    .eventLoop()
                    .schedule(
                            () -> {
                                if (pairs.get(created.requestId) == created) {
                                    pairs.remove(created.requestId);
                                    String msg = "timed out waiting for streams";
                                    LOG.info(
                                            "port-forward request timed out waiting for its data and error streams");
                                    if (created.error != null) {
                                        writeAndClose(created.error, msg);
                                    }
                                    if (created.data != null) {
                                        created.data.reset();
                                    }
                                }
                            },
                            ctx.streamCreationTimeout().toMillis(),
                            TimeUnit.MILLISECONDS);
        }
        if (Protocols.TYPE_ERROR.equals(type)) {
            if (p.error != null) {
                writeAndClose(
                        p.error,
                        "error processing stream for request "
                                + requestId
                                + ": error stream already assigned");
                s.reset();
                return;
            }
            p.error = s;
        } else {
            if (p.data != null) {
                if (p.error != null) {
                    writeText(
                            p.error,
                            "error processing stream for request "
                                    + requestId
                                    + ": data stream already assigned");
                }
                s.reset();
                return;
            }
            p.data = s;
        }
        if (p.data != null && p.error != null) {
            pairs.remove(requestId);
            start(p, port);
        }
    }

    private void start(Pair p, int port) {
        PortStreamImpl stream = new PortStreamImpl(port, p.data.input(), p.data.output());
        active.add(stream);
        Runnable task =
                () -> {
                    try {
                        ctx.runtime().portForward(podSandboxId, port, stream);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } catch (Throwable t) {
                        if (!stream.isClosed()) {
                            LOG.info(
                                    "port-forward to port {} of sandbox {} failed: {}",
                                    port,
                                    podSandboxId,
                                    t.toString());
                            writeText(p.error, PortForwardErrors.json(port, podSandboxId, t));
                        }
                    } finally {
                        active.remove(stream);
                        try {
                            p.data.input().close();
                        } catch (IOException ignored) {
                            // pipe close does not fail
                        }
                        p.data.closeOutput();
                        p.error.closeOutput();
                        stream.markClosed();
                    }
                };
        try {
            ctx.executor().execute(task);
        } catch (RejectedExecutionException e) {
            writeAndClose(
                    p.error,
                    PortForwardErrors.json(
                            port,
                            podSandboxId,
                            new IOException("streaming server is shutting down or overloaded")));
            p.data.reset();
        }
    }

    private static void writeText(SpdyStream s, String text) {
        try {
            s.output().write(text.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            LOG.debug("could not write port-forward error: {}", e.toString());
        }
    }

    private static void writeAndClose(SpdyStream s, String text) {
        writeText(s, text);
        s.closeOutput();
    }

    @Override
    public void onClose() {
        for (PortStreamImpl s : active) {
            s.markClosed();
        }
        onDone.run();
    }
}

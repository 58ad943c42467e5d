package io.cri4j.streaming.internal.portforward;

import io.cri4j.streaming.PortForwardSession;
import io.cri4j.streaming.StreamingException;
import io.cri4j.streaming.internal.Protocols;
import io.cri4j.streaming.internal.spdy.SpdySession;
import io.cri4j.streaming.internal.spdy.SpdyStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Port-forward client over SPDY: an error and a data stream per connection, paired by requestID. */
public final class SpdyPortForwardClient implements PortForwardSession {
    private final SpdySession session;
    private final long replyTimeoutMs;
    private final AtomicInteger nextRequest = new AtomicInteger();

    public SpdyPortForwardClient(SpdySession session, long replyTimeoutMs) {
        this.session = session;
        this.replyTimeoutMs = replyTimeoutMs;
    }

    @Override
    public Connection open(int port) throws IOException {
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port out of range: " + port);
        }
        String id = Integer.toString(nextRequest.getAndIncrement());
        SpdyStream error =
                create(
                        Map.of(
                                Protocols.STREAM_TYPE,
                                Protocols.TYPE_ERROR,
                                Protocols.PORT,
                                Integer.toString(port),
                                Protocols.REQUEST_ID,
                                id));
        ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
        CompletableFuture<String> err = new CompletableFuture<>();
        error.listen(
                b -> errBytes.write(b, 0, b.length),
                () -> err.complete(errBytes.toString(StandardCharsets.UTF_8).trim()));
        error.closeOutput();
        SpdyStream data =
                create(
                        Map.of(
                                Protocols.STREAM_TYPE,
                                Protocols.TYPE_DATA,
                                Protocols.PORT,
                                Integer.toString(port),
                                Protocols.REQUEST_ID,
                                id));
        return new Connection() {
            @Override
            public InputStream input() {
                return data.input();
            }

            @Override
            public OutputStream output() {
                return data.output();
            }

            @Override
            public CompletableFuture<String> error() {
                return err;
            }

            @Override
            public void close() {
                data.reset();
                error.reset();
            }
        };
    }

    private SpdyStream create(Map<String, String> headers) throws IOException {
        SpdyStream s = session.createStream(headers);
        try {
            s.replyFuture().get(replyTimeoutMs, TimeUnit.MILLISECONDS);
            return s;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted");
        } catch (ExecutionException e) {
            throw new StreamingException(
                    "port-forward stream refused: " + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new StreamingException("timed out waiting for the port-forward stream reply", e);
        }
    }

    @Override
    public void close() {
        session.close();
    }
}

package io.cri4j.streaming.internal.remotecommand;

import io.cri4j.streaming.CommandOptions;
import io.cri4j.streaming.RemoteCommand;
import io.cri4j.streaming.StreamingException;
import io.cri4j.streaming.TerminalSize;
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

/** remotecommand client over SPDY, creating the streams in client-go's order. */
public final class SpdyCommandClient implements RemoteCommand {
    private final SpdySession session;
    private final String protocol;
    private final int version;
    private final SpdyStream stdin;
    private final SpdyStream stdout;
    private final SpdyStream stderr;
    private final SpdyStream resize;
    private final CompletableFuture<Integer> exit = new CompletableFuture<>();

    public SpdyCommandClient(
            SpdySession session, String protocol, CommandOptions o, long replyTimeoutMs)
            throws IOException {
        this.session = session;
        this.protocol = protocol;
        this.version = Math.min(4, Protocols.version(protocol));
        SpdyStream error = create(Protocols.TYPE_ERROR, replyTimeoutMs);
        ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
        error.listen(
                b -> errBytes.write(b, 0, b.length),
                () -> {
                    try {
                        exit.complete(
                                ExitStatus.decode(
                                        errBytes.toString(StandardCharsets.UTF_8), version));
                    } catch (StreamingException e) {
                        exit.completeExceptionally(e);
                    }
                });
        session.closeFuture()
                .whenComplete(
                        (v, t) ->
                                exit.completeExceptionally(
                                        new StreamingException(
                                                "connection closed before the exit status", 0)));
        error.closeOutput(); // client-go: we never write to the error stream
        stdin = o.stdin() ? create(Protocols.TYPE_STDIN, replyTimeoutMs) : null;
        stdout = o.stdout() ? create(Protocols.TYPE_STDOUT, replyTimeoutMs) : null;
        stderr = o.stderr() ? create(Protocols.TYPE_STDERR, replyTimeoutMs) : null;
        resize = o.tty() && version >= 3 ? create(Protocols.TYPE_RESIZE, replyTimeoutMs) : null;
    }

    private SpdyStream create(String type, long timeoutMs) throws IOException {
        SpdyStream s = session.createStream(Map.of(Protocols.STREAM_TYPE, type));
        try {
            s.replyFuture().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted");
        } catch (ExecutionException e) {
            throw new StreamingException(
                    "stream " + type + " refused: " + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            session.close();
            throw new StreamingException(
                    "timed out waiting for the reply to the " + type + " stream", e);
        }
        return s;
    }

    @Override
    public String protocol() {
        return protocol;
    }

    @Override
    public OutputStream stdin() {
        return stdin == null ? OutputStream.nullOutputStream() : stdin.output();
    }

    @Override
    public InputStream stdout() {
        return stdout == null ? InputStream.nullInputStream() : stdout.input();
    }

    @Override
    public InputStream stderr() {
        return stderr == null ? InputStream.nullInputStream() : stderr.input();
    }

    @Override
    public void resize(TerminalSize size) throws IOException {
        if (resize == null) {
            throw new IOException(
                    "no resize stream (not a TTY session or protocol " + protocol + ")");
        }
        resize.output().write(ResizeDecoder.message(size));
    }

    @Override
    public CompletableFuture<Integer> exitCode() {
        return exit;
    }

    @Override
    public void close() {
        session.close();
    }
}

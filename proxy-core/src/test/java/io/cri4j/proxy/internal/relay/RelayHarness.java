package io.cri4j.proxy.internal.relay;

import io.cri4j.hook.cri.AsyncCriInterceptor;
import io.cri4j.proxy.internal.interception.InterceptedService;
import io.grpc.MethodDescriptor;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelId;
import io.netty.channel.DefaultChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.embedded.EmbeddedChannel;
import java.net.ConnectException;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link RelayConnection} with both legs on {@link EmbeddedChannel}s: the test is the client
 * and every runtime the relay connects to. Backend connections are made at once, held until
 * {@link #connectHeld}, or refused, as {@link #dial} says.
 */
final class RelayHarness implements AutoCloseable {
    enum Dial {
        CONNECT,
        HOLD,
        REFUSE
    }

    final Wire.Peer client;
    final RelayConnection relay;

    /** Every backend connection the relay made, in order. */
    final List<Wire.Peer> backends = new ArrayList<>();

    /** How the relay's next backend connections go. */
    Dial dial;

    /** Times the relay dialled the backend. */
    int dials;

    private EmbeddedChannel held;
    private ChannelPromise heldPromise;

    /** A relay that intercepts nothing, its first backend connection made at once. */
    RelayHarness() {
        this(Dial.CONNECT);
    }

    /** A relay that intercepts nothing, its first backend connection made as {@code first} says. */
    RelayHarness(Dial first) {
        this(new InterceptedService(null, List.of(), List.of()), first);
    }

    /** A relay whose intercepted methods are {@code methods}, wanted by {@code interceptors}. */
    RelayHarness(List<AsyncCriInterceptor> interceptors, List<MethodDescriptor<?, ?>> methods) {
        this(new InterceptedService(null, interceptors, methods), Dial.CONNECT);
    }

    /** A relay that intercepts nothing and records into {@code metrics}. */
    RelayHarness(RelayMetrics metrics) {
        this(new InterceptedService(null, List.of(), List.of()), Dial.CONNECT, metrics);
    }

    private RelayHarness(InterceptedService service, Dial first) {
        this(service, first, RelayMetrics.NONE);
    }

    private RelayHarness(InterceptedService service, Dial first, RelayMetrics metrics) {
        dial = first;
        RelayConnection.Setup setup =
                new RelayConnection.Setup(service, 4 << 20, "test-runtime", this::connect, metrics);
        RelayConnection[] made = new RelayConnection[1];
        EmbeddedChannel ch =
                new EmbeddedChannel(
                        new ChannelInitializer<Channel>() {
                            @Override
                            protected void initChannel(Channel c) {
                                made[0] = new RelayConnection(setup, c);
                                made[0].install();
                            }
                        });
        relay = made[0];
        client = new Wire.Peer(ch, false);
    }

    private ChannelFuture connect(EventLoop loop, ChannelHandler handler) {
        dials++;
        EmbeddedChannel ch =
                new EmbeddedChannel(DefaultChannelId.newInstance(), false, false, handler);
        ChannelPromise promise = new DefaultChannelPromise(ch, loop);
        switch (dial) {
            case CONNECT -> {
                register(ch);
                promise.setSuccess();
            }
            case HOLD -> {
                held = ch;
                heldPromise = promise;
            }
            case REFUSE -> promise.setFailure(new ConnectException("connection refused"));
        }
        return promise;
    }

    private void register(EmbeddedChannel ch) {
        try {
            ch.register();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        backends.add(new Wire.Peer(ch, true));
    }

    /** Completes the backend connection the relay waits for. */
    Wire.Peer connectHeld() {
        register(held);
        heldPromise.setSuccess();
        held = null;
        settle();
        return backend();
    }

    /** The newest backend connection. */
    Wire.Peer backend() {
        return backends.get(backends.size() - 1);
    }

    /** The client's connection preface and SETTINGS ({@code id, value} pairs). */
    RelayHarness clientHello(int... settings) {
        client.send(
                Unpooled.wrappedBuffer(FrameWriter.PREFACE),
                Wire.settings(settings),
                Wire.settingsAck());
        settle();
        return this;
    }

    /** The backend's SETTINGS ({@code id, value} pairs) on the newest backend connection. */
    RelayHarness backendHello(int... settings) {
        backend().send(Wire.settings(settings), Wire.settingsAck());
        settle();
        return this;
    }

    /** Both hellos, with no settings, and what they wrote dropped. */
    RelayHarness ready() {
        clientHello();
        backendHello();
        client.all();
        backend().all();
        return this;
    }

    /** Writes {@code frames} as the client, then runs the tasks they left. */
    void fromClient(ByteBuf... frames) {
        client.send(frames);
        settle();
    }

    /** Writes {@code frames} as the newest backend, then runs the tasks they left. */
    void fromBackend(ByteBuf... frames) {
        fromBackend(backend(), frames);
    }

    void fromBackend(Wire.Peer backend, ByteBuf... frames) {
        backend.send(frames);
        settle();
    }

    /** Runs what waits on the event loops (flushes the relay scheduled, answers from workers). */
    void settle() {
        for (int i = 0; i < 10; i++) {
            client.ch.runPendingTasks();
            for (Wire.Peer b : backends) {
                b.ch.runPendingTasks();
            }
        }
    }

    /** A relayed request: HEADERS and one DATA frame with {@code message}, ending the stream. */
    void call(int stream, byte[] message) {
        fromClient(
                Wire.headers(stream, Wire.request(Wire.VERSION), false),
                Wire.data(stream, message, true));
    }

    @Override
    public void close() {
        client.ch.finishAndReleaseAll();
        settle();
        client.release();
        for (Wire.Peer b : backends) {
            b.ch.finishAndReleaseAll();
            b.release();
        }
        if (held != null) {
            held.finishAndReleaseAll();
        }
    }
}

package io.cri4j.nri.internal.plugin;

import com.google.protobuf.InvalidProtocolBufferException;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.nri.v1alpha1.ConfigureRequest;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.RegisterPluginRequest;
import io.cri4j.hook.nri.v1alpha1.UpdateContainersRequest;
import io.cri4j.hook.nri.v1alpha1.UpdateContainersResponse;
import io.cri4j.nri.internal.NriMeters;
import io.cri4j.nri.internal.NriWire;
import io.cri4j.nri.internal.PluginEvents;
import io.cri4j.nri.internal.mux.MuxCodec;
import io.cri4j.nri.internal.ttrpc.TtrpcCodec;
import io.cri4j.nri.internal.ttrpc.TtrpcPeer;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection of a plugin to a runtime's NRI socket: NRI's multiplexer on the socket, the
 * plugin service (ttrpc server) on mux connection 1, the runtime service (ttrpc client) on mux
 * connection 2. Registers ({@code RegisterPlugin}), is configured and synchronized by the runtime,
 * then serves events until the socket closes. State lives on the channel's event loop.
 */
public final class NriConnection extends ChannelInboundHandlerAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(NriConnection.class);
    private static final Duration UPDATE_TIMEOUT = Duration.ofSeconds(30);

    private final Channel channel;
    private final String pluginName;
    private final String pluginIndex;
    private final Duration registrationTimeout;
    private final TtrpcCodec ttrpc;
    private final TtrpcPeer plugin;
    private final TtrpcPeer runtime;
    private final CompletableFuture<ConfigureRequest> registered = new CompletableFuture<>();
    private final CompletableFuture<Throwable> closed = new CompletableFuture<>();
    private ConfigureRequest configuration;
    private ScheduledFuture<?> handshakeTimer;
    private volatile boolean shutdownRequested;

    /**
     * A connection on {@code channel} (not yet active); add it to the channel's pipeline.
     *
     * @param hook the hook served; called on the channel's event loop
     */
    public NriConnection(
            Channel channel,
            AsyncHook hook,
            HookPolicy policy,
            Set<HookEvent> events,
            String pluginName,
            String pluginIndex,
            Duration registrationTimeout,
            java.util.concurrent.atomic.AtomicBoolean versionSkewLogged,
            io.cri4j.hook.internal.Tracing tracing,
            NriMeters meters) {
        this.channel = channel;
        this.pluginName = pluginName;
        this.pluginIndex = pluginIndex;
        this.registrationTimeout = registrationTimeout;
        PluginService service =
                new PluginService(
                        hook,
                        policy,
                        events,
                        channel.eventLoop(),
                        new PluginService.Session() {
                            @Override
                            public void configured(ConfigureRequest request) {
                                configuration = request;
                                armHandshakeTimer("the runtime did not synchronize the plugin");
                                LOG.info(
                                        "plugin {}-{}: configured by {} {}",
                                        pluginIndex,
                                        pluginName,
                                        request.getRuntimeName(),
                                        request.getRuntimeVersion());
                            }

                            @Override
                            public RuntimeHandle runtimeHandle() {
                                return NriConnection.this::updateContainers;
                            }

                            @Override
                            public void synchronizedWithRuntime() {
                                if (handshakeTimer != null) {
                                    handshakeTimer.cancel(false);
                                }
                                registered.complete(configuration);
                                // the per-event calls' table (NRI's descriptors): read once the
                                // answer to Synchronize has gone out, before the first event, so
                                // that neither the registration nor that event waits for it
                                channel.eventLoop()
                                        .execute(() -> plugin.whenIdle(PluginEvents::load));
                            }

                            @Override
                            public void registrationFailed(Throwable cause) {
                                ttrpc.fail(
                                        new IllegalStateException(
                                                PluginServiceMessages.describe(cause), cause));
                            }

                            @Override
                            public boolean firstVersionSkew() {
                                return versionSkewLogged.compareAndSet(false, true);
                            }

                            @Override
                            public void shutdownRequested() {
                                shutdownRequested = true;
                                LOG.info(
                                        "plugin {}-{}: the runtime shuts down",
                                        pluginIndex,
                                        pluginName);
                            }
                        },
                        tracing,
                        meters);
        this.ttrpc =
                new TtrpcCodec(
                        channel,
                        service,
                        null,
                        () -> "plugin " + pluginIndex + "-" + pluginName,
                        partial ->
                                new IllegalStateException(
                                        "the runtime closed the connection in the middle of a frame ("
                                                + partial
                                                + ")"));
        this.plugin = ttrpc.pluginService();
        this.runtime = ttrpc.runtimeService();
    }

    /** Completes once configured and synchronized, with the runtime's configuration. */
    public CompletableFuture<ConfigureRequest> registered() {
        return registered;
    }

    /** Completes when the socket has closed, with the reason, or {@code null} for a clean close. */
    public CompletableFuture<Throwable> closed() {
        return closed;
    }

    /** Whether the runtime announced its shutdown before the connection closed. */
    public boolean shutdownRequested() {
        return shutdownRequested;
    }

    /** The channel. */
    public Channel channel() {
        return channel;
    }

    /**
     * Closes the connection once the requests of the runtime being served are answered, or after
     * {@code grace}. NRI has no unregister call: the runtime drops a plugin whose socket closes.
     */
    public CompletableFuture<Throwable> closeGracefully(Duration grace) {
        channel.eventLoop()
                .execute(
                        () -> {
                            ScheduledFuture<?> t =
                                    channel.eventLoop()
                                            .schedule(
                                                    () -> {
                                                        LOG.warn(
                                                                "plugin {}-{}: closing with {} runtime requests unanswered",
                                                                pluginIndex,
                                                                pluginName,
                                                                plugin.activeServerCalls());
                                                        channel.close();
                                                    },
                                                    grace.toNanos(),
                                                    TimeUnit.NANOSECONDS);
                            plugin.whenIdle(
                                    () -> {
                                        t.cancel(false);
                                        channel.close();
                                    });
                        });
        return closed;
    }

    /** Puts NRI's multiplexer and ttrpc below this handler: the pipeline of a plugin's connection. */
    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        ctx.pipeline().addBefore(ctx.name(), null, new MuxCodec());
        ctx.pipeline().addBefore(ctx.name(), null, ttrpc);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        armHandshakeTimer("the runtime did not configure the plugin");
        byte[] req =
                RegisterPluginRequest.newBuilder()
                        .setPluginName(pluginName)
                        .setPluginIdx(pluginIndex)
                        .setNRIVersion(NriWire.NRI_VERSION)
                        .build()
                        .toByteArray();
        runtime.call(NriWire.RUNTIME_SERVICE, "RegisterPlugin", req, registrationTimeout)
                .whenComplete(
                        (v, t) -> {
                            if (t != null) {
                                fail(
                                        new IllegalStateException(
                                                "the runtime refused to register plugin "
                                                        + pluginIndex
                                                        + "-"
                                                        + pluginName
                                                        + ": "
                                                        + PluginServiceMessages.describe(t)));
                            }
                        });
        super.channelActive(ctx);
    }

    private void armHandshakeTimer(String what) {
        if (handshakeTimer != null) {
            handshakeTimer.cancel(false);
        }
        handshakeTimer =
                channel.eventLoop()
                        .schedule(
                                () ->
                                        fail(
                                                new IllegalStateException(
                                                        what
                                                                + " within "
                                                                + registrationTimeout.toMillis()
                                                                + " ms")),
                                registrationTimeout.toNanos(),
                                TimeUnit.NANOSECONDS);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        fail(cause);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (handshakeTimer != null) {
            handshakeTimer.cancel(false);
        }
        Throwable failure = ttrpc.failure();
        if (!registered.isDone()) {
            registered.completeExceptionally(
                    failure != null
                            ? failure
                            : new IllegalStateException(
                                    "the runtime closed the connection before "
                                            + "the plugin was registered"));
        }
        closed.complete(failure);
        super.channelInactive(ctx);
    }

    private void fail(Throwable t) {
        ttrpc.fail(t);
        channel.close();
    }

    private CompletionStage<List<ContainerUpdate>> updateContainers(
            List<ContainerUpdate> updates, List<ContainerEviction> evictions) {
        if (!ttrpc.open()) {
            return CompletableFuture.failedFuture(
                    new IllegalStateException(
                            "the connection to "
                                    + "the runtime this handle belongs to is closed; after reconnecting, the hook "
                                    + "is configured again with a new handle"));
        }
        byte[] req =
                UpdateContainersRequest.newBuilder()
                        .addAllUpdate(updates)
                        .addAllEvict(evictions)
                        .build()
                        .toByteArray();
        return runtime.call(NriWire.RUNTIME_SERVICE, "UpdateContainers", req, UPDATE_TIMEOUT)
                .thenApply(
                        bytes -> {
                            try {
                                return List.copyOf(
                                        UpdateContainersResponse.parseFrom(bytes).getFailedList());
                            } catch (InvalidProtocolBufferException e) {
                                throw new IllegalStateException(
                                        "unreadable UpdateContainers answer: " + e.getMessage(), e);
                            }
                        });
    }
}

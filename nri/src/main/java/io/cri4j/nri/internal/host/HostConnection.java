package io.cri4j.nri.internal.host;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookRejectedException;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.HookTimeoutException;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.nri.v1alpha1.ConfigureRequest;
import io.cri4j.hook.nri.v1alpha1.ConfigureResponse;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.Empty;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.RegisterPluginRequest;
import io.cri4j.hook.nri.v1alpha1.StateChangeEvent;
import io.cri4j.hook.nri.v1alpha1.SynchronizeRequest;
import io.cri4j.hook.nri.v1alpha1.SynchronizeResponse;
import io.cri4j.hook.nri.v1alpha1.UpdateContainersRequest;
import io.cri4j.hook.nri.v1alpha1.UpdateContainersResponse;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentResponse;
import io.cri4j.nri.internal.NriProtocolException;
import io.cri4j.nri.internal.NriWire;
import io.cri4j.nri.internal.PluginEvents;
import io.cri4j.nri.internal.PluginNames;
import io.cri4j.nri.internal.mux.MuxCodec;
import io.cri4j.nri.internal.ttrpc.TraceMetadata;
import io.cri4j.nri.internal.ttrpc.TtrpcCodec;
import io.cri4j.nri.internal.ttrpc.TtrpcPeer;
import io.cri4j.nri.internal.ttrpc.TtrpcStatus;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.BiPredicate;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime's end of one NRI plugin connection, as containerd's {@code pkg/adaptation} runs it:
 * NRI's multiplexer on the socket, the plugin service on mux connection 1 (we call the plugin),
 * the runtime service on mux connection 2 (the plugin calls {@code RegisterPlugin} and {@code
 * UpdateContainers}). The plugin must register within the registration timeout; it is then
 * configured, synchronized with the host's state, the updates it answers are applied, and only
 * then is it {@link Registry#ready ready} as an {@link AsyncHook} ({@link #hook()}). A call the
 * plugin does not answer within its request timeout fails as a timeout of its hook; a plugin that
 * disconnects, or misses {@code maxMissedDeadlines} deadlines in a row, is dropped, the call in
 * flight failing as a failure of its hook. All state lives on the channel's event loop. Not API:
 * {@code io.cri4j.nri.NriHost} is.
 */
public final class HostConnection extends ChannelInboundHandlerAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(HostConnection.class);

    static {
        PluginEvents.load();
    }

    /** Lines about connections dropped before they registered: at most 10 a minute. */
    private static final io.cri4j.cri.internal.LogLimiter UNREGISTERED_LOG =
            new io.cri4j.cri.internal.LogLimiter(10, java.time.Duration.ofMinutes(1));

    /** The events of NRI v0.8 (1..11), all a plugin without an NRI version can take. */
    static final int V0_8_EVENTS = (1 << 11) - 1;

    /** The events of NRI v0.12 (1..14). */
    static final int V0_12_EVENTS = (1 << 14) - 1;

    /** How much longer than the request timeout the hook's own policy waits: the call's deadline comes first. */
    static final Duration POLICY_MARGIN = Duration.ofMillis(250);

    /** The host's registry of plugins; called on the event loop. */
    public interface Registry {
        /**
         * Reserves {@code name} for this connection.
         *
         * @return null when reserved, else why the name cannot be used
         */
        String reserve(HostConnection connection, String name);

        /** The plugin is configured and synchronized: list its hook. */
        void ready(HostConnection connection);

        /** The connection closed; {@code cause} is null for a clean close. */
        void gone(HostConnection connection, Throwable cause);
    }

    /**
     * What the host configures plugins with.
     *
     * @param host the host's runtime
     * @param registrationTimeout how long a plugin may take to register
     * @param requestTimeout how long one call to a plugin may take, unless {@code timeoutOf} says
     *     otherwise
     * @param failurePolicy the failure policy of every plugin's hook but the required ones
     * @param config the configuration text for a plugin, by name ({@code "name"})
     * @param nriVersion the NRI version sent in {@code Configure}, empty for none
     * @param timeoutOf the request timeout of a plugin by name and index
     * @param maxMissedDeadlines how many deadlines in a row a plugin may miss before it is
     *     dropped (1: at the first, as containerd)
     * @param required whether the plugin of a name and index is required: its hook fails the
     *     event on any failure, whatever {@code failurePolicy} says
     */
    public record Settings(
            HookHost host,
            Duration registrationTimeout,
            Duration requestTimeout,
            FailurePolicy failurePolicy,
            Function<String, String> config,
            String nriVersion,
            BiFunction<String, Integer, Duration> timeoutOf,
            int maxMissedDeadlines,
            BiPredicate<String, Integer> required) {

        /** One timeout for every plugin, dropped at its first missed deadline, none required. */
        public Settings(
                HookHost host,
                Duration registrationTimeout,
                Duration requestTimeout,
                FailurePolicy failurePolicy,
                Function<String, String> config,
                String nriVersion) {
            this(
                    host,
                    registrationTimeout,
                    requestTimeout,
                    failurePolicy,
                    config,
                    nriVersion,
                    (n, i) -> requestTimeout,
                    1,
                    (n, i) -> false);
        }
    }

    private enum State {
        CONNECTED,
        CONFIGURING,
        SYNCHRONIZING,
        READY,
        CLOSED
    }

    private final Channel channel;
    private final Settings s;
    private final Registry registry;
    private final String peer;
    private final TtrpcPeer plugin;
    private final TtrpcCodec ttrpc;
    private final PluginHook hook = new PluginHook();
    private volatile State state = State.CONNECTED;
    private volatile String name;
    private volatile String fullName;
    private volatile int index;
    private volatile Set<HookEvent> events = Set.of();
    private volatile boolean stateChangeOnly;
    private volatile String pluginNriVersion = "";
    private volatile Duration timeout;
    private volatile boolean required;
    private final AtomicInteger missedInARow = new AtomicInteger();
    private ScheduledFuture<?> registrationTimer;
    private boolean reserved;

    /**
     * A connection on {@code channel}; add it to the channel's pipeline before it is active.
     *
     * @param peer how logs name the connection before the plugin registers, e.g. {@code pid 1234}
     */
    public HostConnection(Channel channel, Settings settings, Registry registry, String peer) {
        this.channel = channel;
        this.s = settings;
        this.registry = registry;
        this.peer = peer;
        this.ttrpc =
                new TtrpcCodec(
                        channel,
                        null,
                        this::serveRuntime,
                        this::describe,
                        partial ->
                                new IllegalStateException(
                                        describe()
                                                + " closed its connection in the middle of a frame ("
                                                + partial
                                                + ")"));
        this.plugin = ttrpc.pluginService();
        this.timeout = settings.requestTimeout();
    }

    /** The plugin as a hook; listed by the host once {@link Registry#ready} was called. */
    public AsyncHook hook() {
        return hook;
    }

    /** The plugin's name as it registered, or null before. */
    public String name() {
        return name;
    }

    /** {@code index-name} once registered, else a description of the connection. */
    public String describe() {
        String f = fullName;
        return f != null ? "plugin " + f : "unregistered plugin (" + peer + ")";
    }

    /** The plugin's index, 0..99, once registered. */
    public int index() {
        return index;
    }

    /** Whether the host requires this plugin (known once registered). */
    public boolean required() {
        return required;
    }

    /** The events the plugin subscribed to, once configured. */
    public Set<HookEvent> events() {
        return events;
    }

    /** The channel. */
    public Channel channel() {
        return channel;
    }

    /**
     * Tells the plugin that the runtime shuts down ({@code Shutdown}), then closes the connection.
     * Completes when closed, at most about {@code wait} after the call.
     */
    public CompletableFuture<Void> shutdown(Duration wait) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        channel.closeFuture().addListener(f -> done.complete(null));
        if (state == State.READY) {
            plugin.call(
                            NriWire.PLUGIN_SERVICE,
                            "Shutdown",
                            Empty.getDefaultInstance().toByteArray(),
                            wait)
                    .whenComplete((v, t) -> channel.close());
        } else {
            channel.close();
        }
        return done;
    }

    // --- the connection -------------------------------------------------------------------

    /** Puts NRI's multiplexer and ttrpc below this handler: the pipeline of a plugin's connection. */
    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        ctx.pipeline().addBefore(ctx.name(), null, new MuxCodec());
        ctx.pipeline().addBefore(ctx.name(), null, ttrpc);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        registrationTimer =
                channel.eventLoop()
                        .schedule(
                                () ->
                                        fail(
                                                new IllegalStateException(
                                                        describe()
                                                                + " did not register within "
                                                                + s.registrationTimeout().toMillis()
                                                                + " ms")),
                                s.registrationTimeout().toNanos(),
                                TimeUnit.NANOSECONDS);
        LOG.debug("NRI plugin connection from {}", peer);
        super.channelActive(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        fail(
                new IllegalStateException(
                        describe()
                                + (cause instanceof NriProtocolException
                                        ? " sent bytes that are not NRI: "
                                        : ": connection lost: ")
                                + cause.getMessage(),
                        cause));
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        State was = state;
        state = State.CLOSED;
        registered.complete(null);
        if (registrationTimer != null) {
            registrationTimer.cancel(false);
        }
        Throwable failure = ttrpc.failure();
        String more = was == State.READY ? "" : UNREGISTERED_LOG.admit();
        if (more == null) {
            // a flood of bad connections: left out of the log, counted in the next line
        } else if (failure != null) {
            LOG.warn("{}{}", failure.getMessage(), more);
        } else if (was == State.READY) {
            LOG.info("{} disconnected", describe());
        } else {
            LOG.warn("{} disconnected before it was registered{}", describe(), more);
        }
        registry.gone(this, failure);
        super.channelInactive(ctx);
    }

    /** Completes once this plugin is listed, failed or gone: the end of its registration. */
    private final CompletableFuture<Void> registered = new CompletableFuture<>();

    /** Drops the plugin: logs why (once the channel is inactive), closes the connection. */
    private void fail(Throwable t) {
        ttrpc.fail(t);
        registered.complete(null);
        if (channel.isActive()) {
            // after what was written so far, e.g. the error answer to a bad registration
            channel.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        } else {
            channel.close();
        }
    }

    // --- the runtime service (the plugin calls us) ------------------------------------------

    private CompletionStage<byte[]> serveRuntime(TtrpcPeer.Call call) {
        if (!NriWire.RUNTIME_SERVICE.equals(call.service())) {
            return failed(Status.Code.UNIMPLEMENTED, "service " + call.service());
        }
        try {
            return switch (call.method()) {
                case "RegisterPlugin" -> register(RegisterPluginRequest.parseFrom(call.payload()));
                case "UpdateContainers" ->
                        updateContainers(UpdateContainersRequest.parseFrom(call.payload()));
                default ->
                        failed(
                                Status.Code.UNIMPLEMENTED,
                                NriWire.RUNTIME_SERVICE
                                        + "/"
                                        + call.method()
                                        + " is not a method of NRI's runtime service");
            };
        } catch (InvalidProtocolBufferException e) {
            return failed(
                    Status.Code.INVALID_ARGUMENT,
                    "cannot read the " + call.method() + " request: " + e.getMessage());
        }
    }

    private CompletionStage<byte[]> register(RegisterPluginRequest r) {
        if (state != State.CONNECTED || name != null) {
            return failed(Status.Code.FAILED_PRECONDITION, describe() + " is registered already");
        }
        String bad = PluginNames.checkName(r.getPluginName());
        if (bad == null) {
            bad = PluginNames.checkIndex(r.getPluginIdx());
        }
        if (bad == null) {
            bad = registry.reserve(this, r.getPluginName());
            reserved = bad == null;
        }
        if (bad != null) {
            String why =
                    "refused the registration of "
                            + describe()
                            + " as "
                            + r.getPluginIdx()
                            + "-"
                            + r.getPluginName()
                            + ": "
                            + bad;
            channel.eventLoop().execute(() -> fail(new IllegalStateException(why)));
            return failed(Status.Code.INVALID_ARGUMENT, why);
        }
        registrationTimer.cancel(false);
        name = r.getPluginName();
        index = Integer.parseInt(r.getPluginIdx());
        fullName = r.getPluginIdx() + "-" + r.getPluginName();
        pluginNriVersion = r.getNRIVersion();
        timeout = s.timeoutOf().apply(name, index);
        required = s.required().test(name, index);
        LOG.info(
                "plugin {} registered ({}, NRI version {})",
                fullName,
                peer,
                r.getNRIVersion().isEmpty() ? "unknown" : r.getNRIVersion());
        state = State.CONFIGURING;
        channel.eventLoop().execute(this::configure);
        return CompletableFuture.completedFuture(Empty.getDefaultInstance().toByteArray());
    }

    /** Whether this connection holds its name in the host's registry. */
    public boolean holdsName() {
        return reserved;
    }

    private CompletionStage<byte[]> updateContainers(UpdateContainersRequest r) {
        if (name == null) {
            return failed(
                    Status.Code.FAILED_PRECONDITION,
                    describe() + " asked for container " + "updates before registering");
        }
        LOG.info(
                "plugin {} requested updates of {} and evictions of {}",
                fullName,
                ids(r.getUpdateList(), ContainerUpdate::getContainerId),
                ids(
                        r.getEvictList(),
                        io.cri4j.hook.nri.v1alpha1.ContainerEviction::getContainerId));
        CompletionStage<List<ContainerUpdate>> applied;
        try {
            applied = s.host().runtime().updateContainers(r.getUpdateList(), r.getEvictList());
        } catch (RuntimeException e) {
            applied = CompletableFuture.failedFuture(e);
        }
        return applied.handle(
                (failedUpdates, t) -> {
                    if (t != null) {
                        String why =
                                "the runtime could not apply the updates of plugin "
                                        + fullName
                                        + ": "
                                        + message(t);
                        LOG.warn(why);
                        throw TtrpcStatus.error(Status.Code.UNKNOWN, why);
                    }
                    if (!failedUpdates.isEmpty()) {
                        LOG.warn(
                                "plugin {}: {} of its container updates failed: {}",
                                fullName,
                                failedUpdates.size(),
                                ids(failedUpdates, ContainerUpdate::getContainerId));
                    }
                    return UpdateContainersResponse.newBuilder()
                            .addAllFailed(failedUpdates)
                            .build()
                            .toByteArray();
                });
    }

    // --- registration: Configure, Synchronize ------------------------------------------------

    private void configure() {
        if (state != State.CONFIGURING) {
            return;
        }
        ConfigureRequest req =
                ConfigureRequest.newBuilder()
                        .setConfig(nullToEmpty(s.config().apply(name)))
                        .setRuntimeName(s.host().runtimeName())
                        .setRuntimeVersion(s.host().runtimeVersion())
                        .setRegistrationTimeout(s.registrationTimeout().toMillis())
                        .setRequestTimeout(timeout.toMillis())
                        .setNRIVersion(s.nriVersion())
                        .build();
        plugin.call(NriWire.PLUGIN_SERVICE, "Configure", req.toByteArray(), timeout)
                .whenComplete(
                        (bytes, t) -> {
                            if (t != null) {
                                fail(
                                        new IllegalStateException(
                                                "plugin "
                                                        + fullName
                                                        + " failed to be "
                                                        + "configured: "
                                                        + message(t),
                                                t));
                                return;
                            }
                            int mask;
                            try {
                                mask = ConfigureResponse.parseFrom(bytes).getEvents();
                            } catch (InvalidProtocolBufferException e) {
                                fail(
                                        new IllegalStateException(
                                                "plugin "
                                                        + fullName
                                                        + " answered Configure "
                                                        + "with an unreadable message: "
                                                        + e.getMessage(),
                                                e));
                                return;
                            }
                            int valid = s.nriVersion().isEmpty() ? V0_8_EVENTS : V0_12_EVENTS;
                            if (mask == 0) {
                                // "all events": those of the plugin's NRI version, v0.8's when it
                                // names none
                                mask = pluginNriVersion.isEmpty() ? V0_8_EVENTS : valid;
                            }
                            if ((mask & ~valid) != 0) {
                                fail(
                                        new IllegalStateException(
                                                String.format(
                                                        "plugin %s subscribed to "
                                                                + "unknown events: 0x%x",
                                                        fullName, mask & ~valid)));
                                return;
                            }
                            events =
                                    java.util.Collections.unmodifiableSet(
                                            HookEvent.fromNriMask(mask));
                            synchronize();
                        });
    }

    private void synchronize() {
        if (state != State.CONFIGURING) {
            return;
        }
        state = State.SYNCHRONIZING;
        CompletionStage<Void> registration;
        try {
            registration =
                    s.host()
                            .register(
                                    snapshot -> {
                                        onLoop(() -> synchronize(snapshot));
                                        return registered;
                                    });
        } catch (RuntimeException e) {
            registration = CompletableFuture.failedFuture(e);
        }
        registration.whenComplete(
                (v, t) -> {
                    if (t != null) {
                        onLoop(
                                () ->
                                        fail(
                                                new IllegalStateException(
                                                        "the host could not give its pods and containers to "
                                                                + "synchronize plugin "
                                                                + fullName
                                                                + ": "
                                                                + message(t),
                                                        t)));
                    }
                });
    }

    private void synchronize(RuntimeSnapshot snapshot) {
        List<SynchronizeRequest> messages;
        try {
            messages =
                    SyncSplitter.split(
                            snapshot.pods(), snapshot.containers(), SyncSplitter.MAX_MESSAGE);
        } catch (IllegalArgumentException e) {
            fail(
                    new IllegalStateException(
                            "cannot synchronize plugin " + fullName + ": " + e.getMessage(), e));
            return;
        }
        if (messages.size() > 1) {
            LOG.info(
                    "synchronizing plugin {}: {} pods and {} containers in {} messages",
                    fullName,
                    snapshot.pods().size(),
                    snapshot.containers().size(),
                    messages.size());
        } else {
            LOG.debug(
                    "synchronizing plugin {}: {} pods and {} containers",
                    fullName,
                    snapshot.pods().size(),
                    snapshot.containers().size());
        }
        sendSync(messages, 0);
    }

    private void sendSync(List<SynchronizeRequest> messages, int i) {
        SynchronizeRequest req = messages.get(i);
        // bounded by the request timeout, as containerd bounds it (HostGoldenConversationTest)
        plugin.call(NriWire.PLUGIN_SERVICE, "Synchronize", req.toByteArray(), timeout)
                .whenComplete(
                        (bytes, t) -> {
                            if (t != null) {
                                fail(
                                        new IllegalStateException(
                                                "plugin "
                                                        + fullName
                                                        + " failed to be "
                                                        + "synchronized"
                                                        + (messages.size() > 1
                                                                ? " (message "
                                                                        + (i + 1)
                                                                        + " of "
                                                                        + messages.size()
                                                                        + ")"
                                                                : "")
                                                        + ": "
                                                        + message(t),
                                                t));
                                return;
                            }
                            SynchronizeResponse rsp;
                            try {
                                rsp = SynchronizeResponse.parseFrom(bytes);
                            } catch (InvalidProtocolBufferException e) {
                                fail(
                                        new IllegalStateException(
                                                "plugin "
                                                        + fullName
                                                        + " answered "
                                                        + "Synchronize with an unreadable message: "
                                                        + e.getMessage(),
                                                e));
                                return;
                            }
                            if (req.getMore()) {
                                if (!rsp.getMore() || rsp.getUpdateCount() > 0) {
                                    fail(
                                            new IllegalStateException(
                                                    "plugin "
                                                            + fullName
                                                            + " does not handle "
                                                            + "a Synchronize split in "
                                                            + messages.size()
                                                            + " messages (it "
                                                            + "answered the first part without more = true); the host's "
                                                            + "state is too large for one ttrpc message"));
                                    return;
                                }
                                sendSync(messages, i + 1);
                                return;
                            }
                            applySyncUpdates(rsp.getUpdateList());
                        });
    }

    private void applySyncUpdates(List<ContainerUpdate> updates) {
        CompletionStage<List<ContainerUpdate>> applied;
        if (updates.isEmpty()) {
            applied = CompletableFuture.completedFuture(List.of());
        } else {
            LOG.info(
                    "plugin {} answered Synchronize with updates of {}",
                    fullName,
                    ids(updates, ContainerUpdate::getContainerId));
            try {
                applied = s.host().runtime().updateContainers(updates, List.of());
            } catch (RuntimeException e) {
                applied = CompletableFuture.failedFuture(e);
            }
        }
        applied.whenComplete(
                (failedUpdates, t) ->
                        onLoop(
                                () -> {
                                    if (t != null) {
                                        LOG.warn(
                                                "plugin {}: the runtime could not apply the updates it answered "
                                                        + "Synchronize with: {}",
                                                fullName,
                                                message(t));
                                    } else if (!failedUpdates.isEmpty()) {
                                        LOG.warn(
                                                "plugin {}: {} of the updates it answered Synchronize with failed: {}",
                                                fullName,
                                                failedUpdates.size(),
                                                ids(
                                                        failedUpdates,
                                                        ContainerUpdate::getContainerId));
                                    }
                                    if (state != State.SYNCHRONIZING || !channel.isActive()) {
                                        registered.complete(null);
                                        return;
                                    }
                                    state = State.READY;
                                    LOG.info(
                                            "plugin {} connected and synchronized; events: {}",
                                            fullName,
                                            NriWire.names(events));
                                    registry.ready(this);
                                    registered.complete(null);
                                }));
    }

    // --- events (we call the plugin) ---------------------------------------------------------

    /** Parses an answer. */
    private interface Parser<T> {
        T parse(byte[] bytes) throws InvalidProtocolBufferException;
    }

    /**
     * Calls {@code method} on the plugin with its request timeout. A plugin already gone when the
     * call comes (a chain listed it before its connection closed) is skipped, as containerd skips
     * closed plugins, with an empty answer; a required one fails the call. A plugin that closes the
     * connection during the call is dropped and the call fails; a missed deadline fails the call
     * (and drops the plugin once it missed {@code maxMissedDeadlines} in a row); a plugin's error
     * status fails the call with its message.
     */
    private <T> CompletableFuture<T> call(
            HookEvent event, String method, Message request, Parser<T> parser) {
        CompletableFuture<T> out = new CompletableFuture<>();
        if (state != State.READY) {
            if (required) {
                out.completeExceptionally(
                        new IllegalStateException(describe() + " is disconnected"));
                return out;
            }
            LOG.debug("{} is gone; skipped for {}", describe(), method);
            try {
                out.complete(parser.parse(new byte[0]));
            } catch (InvalidProtocolBufferException e) {
                out.completeExceptionally(e);
            }
            return out;
        }
        long start = System.nanoTime();
        plugin.call(
                        NriWire.PLUGIN_SERVICE,
                        method,
                        request.toByteArray(),
                        timeout,
                        TraceMetadata.current())
                .whenComplete(
                        (bytes, t) -> {
                            if (t == null) {
                                missedInARow.set(0);
                                try {
                                    out.complete(parser.parse(bytes));
                                } catch (InvalidProtocolBufferException e) {
                                    out.completeExceptionally(
                                            new IllegalStateException(
                                                    "plugin "
                                                            + fullName
                                                            + " answered "
                                                            + method
                                                            + " with an unreadable message: "
                                                            + e.getMessage(),
                                                    e));
                                }
                                return;
                            }
                            out.completeExceptionally(callFailure(event, method, t, start));
                        });
        return out;
    }

    private Throwable callFailure(HookEvent event, String method, Throwable t, long start) {
        Throwable c = TtrpcStatus.unwrap(t);
        Status.Code code =
                c instanceof StatusRuntimeException sre
                        ? sre.getStatus().getCode()
                        : Status.Code.UNKNOWN;
        if (state == State.CLOSED || !channel.isActive()) {
            Throwable why = ttrpc.failure();
            return new IllegalStateException(
                    "plugin "
                            + fullName
                            + " disconnected before "
                            + "answering "
                            + method
                            + (why != null ? " (" + why.getMessage() + ")" : ""),
                    c);
        }
        if (code == Status.Code.DEADLINE_EXCEEDED
                && System.nanoTime() - start >= timeout.toNanos()) {
            int missed = missedInARow.incrementAndGet();
            if (missed >= s.maxMissedDeadlines()) {
                fail(
                        new IllegalStateException(
                                "plugin "
                                        + fullName
                                        + " did not answer "
                                        + method
                                        + " within "
                                        + timeout.toMillis()
                                        + " ms"
                                        + (missed > 1
                                                ? ", its " + missed + " missed deadlines in a row"
                                                : "")
                                        + "; dropping it"));
            } else {
                LOG.warn(
                        "plugin {} did not answer {} within {} ms ({} of {} missed deadlines in a row"
                                + " before it is dropped)",
                        fullName,
                        method,
                        timeout.toMillis(),
                        missed,
                        s.maxMissedDeadlines());
            }
            return new HookTimeoutException(name, event, method, timeout);
        }
        return new IllegalStateException(
                "plugin " + fullName + " answered " + method + " with an error: " + message(c), c);
    }

    /**
     * Calls the plugin for {@code event}, as {@link PluginEvents} says: its method, its request
     * from the arguments, its answer as a result. An event NRI v0.8 sends as {@code StateChange}
     * goes so to a plugin that answered one such call UNIMPLEMENTED (as upstream does).
     */
    private CompletionStage<HookResult> dispatch(
            HookEvent event,
            PodSandbox pod,
            Container ctr,
            LinuxResources overhead,
            LinuxResources resources) {
        PluginEvents.Rpc rpc = PluginEvents.of(event);
        if (!rpc.stateChange()) {
            return call(
                    event, rpc.method(), rpc.request(pod, ctr, overhead, resources), rpc::result);
        }
        if (stateChangeOnly) {
            return stateChange(event, pod, ctr);
        }
        CompletableFuture<HookResult> out = new CompletableFuture<>();
        call(event, rpc.method(), rpc.request(pod, ctr, null, null), b -> HookResult.none())
                .whenComplete(
                        (v, t) -> {
                            if (t == null) {
                                out.complete(v);
                            } else if (t.getCause() instanceof StatusRuntimeException sre
                                    && sre.getStatus().getCode() == Status.Code.UNIMPLEMENTED) {
                                stateChangeOnly = true;
                                LOG.info(
                                        "plugin {} does not implement {}; sending it StateChange events (NRI "
                                                + "v0.8)",
                                        fullName,
                                        event.displayName());
                                stateChange(event, pod, ctr)
                                        .whenComplete(
                                                (x, t2) -> {
                                                    if (t2 == null) {
                                                        out.complete(x);
                                                    } else {
                                                        out.completeExceptionally(t2);
                                                    }
                                                });
                            } else {
                                out.completeExceptionally(t);
                            }
                        });
        return out;
    }

    private CompletionStage<HookResult> stateChange(
            HookEvent event, PodSandbox pod, Container ctr) {
        StateChangeEvent.Builder e =
                StateChangeEvent.newBuilder().setEvent(event.nriEvent().orElseThrow()).setPod(pod);
        if (ctr != null) {
            e.setContainer(ctr);
        }
        return call(event, "StateChange", e.build(), b -> HookResult.none());
    }

    private CompletionStage<Void> announce(HookEvent event, PodSandbox pod, Container ctr) {
        return dispatch(event, pod, ctr, null, null).thenApply(r -> null);
    }

    /** One plugin as a hook of the host's chain. */
    private final class PluginHook implements AsyncHook {

        @Override
        public String name() {
            return name;
        }

        @Override
        public HookPolicy policy() {
            Duration t = timeout.plus(POLICY_MARGIN);
            if (t.compareTo(HookPolicy.MAX_TIMEOUT) > 0) {
                t = HookPolicy.MAX_TIMEOUT;
            }
            return new HookPolicy(index, t, required ? FailurePolicy.FAIL : s.failurePolicy());
        }

        @Override
        public Set<HookEvent> events() {
            return events;
        }

        @Override
        public CompletionStage<Void> runPodSandbox(PodSandbox pod) {
            return announce(HookEvent.RUN_POD_SANDBOX, pod, null);
        }

        @Override
        public CompletionStage<Void> updatePodSandbox(
                PodSandbox pod, LinuxResources overhead, LinuxResources resources) {
            return dispatch(HookEvent.UPDATE_POD_SANDBOX, pod, null, overhead, resources)
                    .thenApply(r -> null);
        }

        @Override
        public CompletionStage<Void> postUpdatePodSandbox(PodSandbox pod) {
            return announce(HookEvent.POST_UPDATE_POD_SANDBOX, pod, null);
        }

        @Override
        public CompletionStage<Void> stopPodSandbox(PodSandbox pod) {
            return announce(HookEvent.STOP_POD_SANDBOX, pod, null);
        }

        @Override
        public CompletionStage<Void> removePodSandbox(PodSandbox pod) {
            return announce(HookEvent.REMOVE_POD_SANDBOX, pod, null);
        }

        @Override
        public CompletionStage<HookResult> createContainer(PodSandbox pod, Container container) {
            return dispatch(HookEvent.CREATE_CONTAINER, pod, container, null, null);
        }

        @Override
        public CompletionStage<Void> postCreateContainer(PodSandbox pod, Container container) {
            return announce(HookEvent.POST_CREATE_CONTAINER, pod, container);
        }

        @Override
        public CompletionStage<Void> startContainer(PodSandbox pod, Container container) {
            return announce(HookEvent.START_CONTAINER, pod, container);
        }

        @Override
        public CompletionStage<Void> postStartContainer(PodSandbox pod, Container container) {
            return announce(HookEvent.POST_START_CONTAINER, pod, container);
        }

        @Override
        public CompletionStage<HookResult> updateContainer(
                PodSandbox pod, Container container, LinuxResources resources) {
            return dispatch(HookEvent.UPDATE_CONTAINER, pod, container, null, resources);
        }

        @Override
        public CompletionStage<Void> postUpdateContainer(PodSandbox pod, Container container) {
            return announce(HookEvent.POST_UPDATE_CONTAINER, pod, container);
        }

        @Override
        public CompletionStage<HookResult> stopContainer(PodSandbox pod, Container container) {
            return dispatch(HookEvent.STOP_CONTAINER, pod, container, null, null);
        }

        @Override
        public CompletionStage<Void> removeContainer(PodSandbox pod, Container container) {
            return announce(HookEvent.REMOVE_CONTAINER, pod, container);
        }

        @Override
        public CompletionStage<Void> validateContainerAdjustment(
                ValidateContainerAdjustmentRequest request) {
            return call(
                            HookEvent.VALIDATE_CONTAINER_ADJUSTMENT,
                            "ValidateContainerAdjustment",
                            request,
                            ValidateContainerAdjustmentResponse::parseFrom)
                    .thenApply(
                            r -> {
                                if (r.getReject()) {
                                    throw new HookRejectedException(
                                            name,
                                            r.getReason().isEmpty()
                                                    ? "no reason given"
                                                    : r.getReason(),
                                            null);
                                }
                                return null;
                            });
        }

        @Override
        public String toString() {
            return "NRI " + describe();
        }
    }

    // --- helpers ---------------------------------------------------------------------------

    private void onLoop(Runnable r) {
        if (channel.eventLoop().inEventLoop()) {
            r.run();
        } else {
            try {
                channel.eventLoop().execute(r);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                LOG.debug("{}: event loop gone", describe());
            }
        }
    }

    private static <T> List<String> ids(List<T> items, Function<T, String> id) {
        List<String> out = new ArrayList<>();
        items.forEach(i -> out.add(id.apply(i)));
        return out;
    }

    private static String nullToEmpty(String v) {
        return v == null ? "" : v;
    }

    static String message(Throwable t) {
        Throwable c = TtrpcStatus.unwrap(t);
        if (c instanceof StatusRuntimeException sre) {
            String d = sre.getStatus().getDescription();
            return sre.getStatus().getCode() + (d == null ? "" : ": " + d);
        }
        return c.getMessage() == null ? c.getClass().getName() : c.getMessage();
    }

    private static <T> CompletionStage<T> failed(Status.Code code, String message) {
        return CompletableFuture.failedFuture(TtrpcStatus.error(code, message));
    }

    @Override
    public String toString() {
        return "HostConnection[" + describe() + "]";
    }
}

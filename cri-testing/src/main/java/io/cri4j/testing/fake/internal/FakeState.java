package io.cri4j.testing.fake.internal;

import io.cri4j.cri.v1.Container;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerEventType;
import io.cri4j.cri.v1.ContainerFilter;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerResources;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStatus;
import io.cri4j.cri.v1.Image;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.LinuxPodSandboxStatus;
import io.cri4j.cri.v1.Namespace;
import io.cri4j.cri.v1.NamespaceMode;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.PodSandbox;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxFilter;
import io.cri4j.cri.v1.PodSandboxNetworkStatus;
import io.cri4j.cri.v1.PodSandboxState;
import io.cri4j.cri.v1.PodSandboxStatus;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * The one in-memory state behind both API versions of the fake: pod sandboxes, containers and images, kept as
 * {@code runtime.v1} messages. Every method is atomic (one lock); errors are {@link StatusRuntimeException}s
 * with the codes containerd answers where containerd answers a specific code.
 */
public final class FakeState {

    /** Exit code of a container killed by SIGKILL (128 + 9), what a forced stop leaves. */
    public static final int KILLED_EXIT_CODE = 137;

    private final Clock clock;
    private final SecureRandom random = new SecureRandom();
    private final Map<String, SandboxRecord> sandboxes = new LinkedHashMap<>();
    private final Map<String, ContainerRecord> containers = new LinkedHashMap<>();
    private final Map<String, ImageRecord> images = new LinkedHashMap<>();
    private final List<Consumer<ContainerEventResponse>> listeners = new CopyOnWriteArrayList<>();

    /** How many of the listeners are clients' event streams; guarded by {@link #listeners}. */
    private int streams;

    private final List<Runnable> resetActions = new CopyOnWriteArrayList<>();
    private int nextIp = 2;
    private int nextPid = 4000;
    private String podCidr = "";

    /** A pod sandbox as the fake keeps it. */
    public static final class SandboxRecord {
        final String id;
        final PodSandboxConfig config;
        final String runtimeHandler;
        final long createdAt;
        final String ip;
        final int pid;
        PodSandboxState state = PodSandboxState.SANDBOX_READY;
        LinuxContainerResources resources;

        SandboxRecord(
                String id,
                PodSandboxConfig config,
                String runtimeHandler,
                long createdAt,
                String ip,
                int pid) {
            this.id = id;
            this.config = config;
            this.runtimeHandler = runtimeHandler;
            this.createdAt = createdAt;
            this.ip = ip;
            this.pid = pid;
            this.resources = config.getLinux().getResources();
        }

        public String id() {
            return id;
        }

        public PodSandboxConfig config() {
            return config;
        }

        public long createdAt() {
            return createdAt;
        }

        public boolean ready() {
            return state == PodSandboxState.SANDBOX_READY;
        }
    }

    /** A container as the fake keeps it. */
    public static final class ContainerRecord {
        final String id;
        final String sandboxId;
        final ContainerConfig config;
        final String imageId;
        final String logPath;
        final long createdAt;
        ContainerState state = ContainerState.CONTAINER_CREATED;
        long startedAt;
        long finishedAt;
        int exitCode;
        int pid;
        String reason = "";
        String message = "";

        /** The applied (after hooks) resources: what the container runs with. */
        LinuxContainerResources resources;

        /** The applied (after hooks) annotations: what the container's OCI spec carries. */
        Map<String, String> annotations;

        /** The config as CRI requested it (before hooks): what ContainerStatus reports. */
        ContainerConfig requested;

        /** The resources ContainerStatus reports: the requested ones, then the updated ones. */
        LinuxContainerResources statusResources;

        /** The annotations ContainerStatus reports: the requested ones and the updated ones. */
        Map<String, String> statusAnnotations;

        ContainerRecord(
                String id,
                String sandboxId,
                ContainerConfig config,
                String imageId,
                String logPath,
                long createdAt) {
            this.id = id;
            this.sandboxId = sandboxId;
            this.config = config;
            this.imageId = imageId;
            this.logPath = logPath;
            this.createdAt = createdAt;
            this.resources = config.getLinux().getResources();
            this.annotations = new LinkedHashMap<>(config.getAnnotationsMap());
            requested(config);
        }

        void requested(ContainerConfig requested) {
            this.requested = requested;
            this.statusResources = requested.getLinux().getResources();
            this.statusAnnotations = new LinkedHashMap<>(requested.getAnnotationsMap());
        }

        public String id() {
            return id;
        }

        /** The config as CRI requested it, before hooks adjusted it ({@link #config()}). */
        public ContainerConfig requestedConfig() {
            return requested;
        }

        public String sandboxId() {
            return sandboxId;
        }

        public ContainerConfig config() {
            return config;
        }

        public ContainerState state() {
            return state;
        }

        public long startedAt() {
            return startedAt;
        }

        public LinuxContainerResources resources() {
            return resources;
        }

        public Map<String, String> env() {
            Map<String, String> env = new LinkedHashMap<>();
            for (KeyValue kv : config.getEnvsList()) {
                env.put(kv.getKey(), kv.getValue().toString(StandardCharsets.UTF_8));
            }
            return env;
        }
    }

    /** An image as the fake keeps it. */
    public static final class ImageRecord {
        final String id;
        final Set<String> repoTags = new LinkedHashSet<>();
        final Set<String> repoDigests = new LinkedHashSet<>();
        final long size;
        boolean pinned;

        ImageRecord(String id, long size) {
            this.id = id;
            this.size = size;
        }

        Image toImage() {
            return Image.newBuilder()
                    .setId(id)
                    .addAllRepoTags(repoTags)
                    .addAllRepoDigests(repoDigests)
                    .setSize(size)
                    .setPinned(pinned)
                    .setSpec(ImageSpec.newBuilder().setImage(id))
                    .build();
        }
    }

    public FakeState(Clock clock) {
        this.clock = clock;
    }

    /** Nanoseconds since the epoch, the unit of every CRI timestamp. */
    public long now() {
        Instant i = clock.instant();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    /**
     * Subscribes the fake's own parts to container events; the listener runs under the state lock
     * and must not block.
     */
    public AutoCloseable subscribe(Consumer<ContainerEventResponse> listener) {
        return subscribe(listener, false);
    }

    /**
     * Subscribes a client's {@code GetContainerEvents} stream (what {@link #awaitSubscribers}
     * counts); the listener runs under the state lock and must not block.
     */
    public AutoCloseable subscribeStream(Consumer<ContainerEventResponse> listener) {
        return subscribe(listener, true);
    }

    private AutoCloseable subscribe(Consumer<ContainerEventResponse> listener, boolean stream) {
        synchronized (listeners) {
            listeners.add(listener);
            if (stream) {
                streams++;
            }
            listeners.notifyAll();
        }
        return () -> {
            synchronized (listeners) {
                if (listeners.remove(listener) && stream) {
                    streams--;
                }
                listeners.notifyAll();
            }
        };
    }

    /** Waits until at least {@code n} event streams are subscribed; false on timeout. */
    public boolean awaitSubscribers(int n, java.time.Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (listeners) {
            while (streams < n) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(listeners, left);
            }
            return true;
        }
    }

    // ---------------------------------------------------------------- sandboxes

    public synchronized String runPodSandbox(PodSandboxConfig config, String runtimeHandler) {
        return runPodSandbox(config, runtimeHandler, newId());
    }

    /** Runs a pod sandbox under an id reserved with {@link #newObjectId()} (hook hosts name it first). */
    public synchronized String runPodSandbox(
            PodSandboxConfig config, String runtimeHandler, String id) {
        if (!config.hasMetadata() || config.getMetadata().getName().isEmpty()) {
            throw invalid("sandbox config must include metadata with a name");
        }
        if (!runtimeHandler.isEmpty() && !runtimeHandler.equals("runc")) {
            throw Status.NOT_FOUND
                    .withDescription(
                            "failed to get sandbox runtime: no runtime for \""
                                    + runtimeHandler
                                    + "\" is configured (the fake knows \"\" and \"runc\")")
                    .asRuntimeException();
        }
        String name = sandboxName(config);
        for (SandboxRecord s : sandboxes.values()) {
            if (sandboxName(s.config).equals(name)) {
                throw Status.ALREADY_EXISTS
                        .withDescription(
                                "failed to reserve sandbox name \""
                                        + name
                                        + "\": name is reserved for \""
                                        + s.id
                                        + "\"")
                        .asRuntimeException();
            }
        }
        boolean hostNetwork =
                config.getLinux().getSecurityContext().getNamespaceOptions().getNetwork()
                        == NamespaceMode.NODE;
        String ip = hostNetwork ? "" : "10.88.0." + (nextIp++ % 250 + 2);
        SandboxRecord s = new SandboxRecord(id, config, runtimeHandler, now(), ip, nextPid++);
        sandboxes.put(id, s);
        publish(id, s, ContainerEventType.CONTAINER_CREATED_EVENT);
        publish(id, s, ContainerEventType.CONTAINER_STARTED_EVENT);
        return id;
    }

    public synchronized void stopPodSandbox(String id) {
        SandboxRecord s = sandbox(id);
        for (ContainerRecord c : containersOf(id)) {
            if (c.state == ContainerState.CONTAINER_RUNNING) {
                exit(c, KILLED_EXIT_CODE, "Error", "");
            }
        }
        if (s.state == PodSandboxState.SANDBOX_READY) {
            s.state = PodSandboxState.SANDBOX_NOTREADY;
            publish(id, s, ContainerEventType.CONTAINER_STOPPED_EVENT);
        }
    }

    public synchronized void removePodSandbox(String id) {
        SandboxRecord s = sandboxes.get(id);
        if (s == null) {
            return; // containerd: removing a sandbox that does not exist succeeds
        }
        stopPodSandbox(id);
        for (ContainerRecord c : containersOf(id)) {
            removeContainer(c.id);
        }
        sandboxes.remove(id);
        publish(id, s, ContainerEventType.CONTAINER_DELETED_EVENT);
    }

    public synchronized PodSandboxStatus podSandboxStatus(String id) {
        return sandboxStatus(sandbox(id));
    }

    public synchronized List<ContainerStatus> containerStatusesOf(String sandboxId) {
        List<ContainerStatus> out = new ArrayList<>();
        for (ContainerRecord c : containersOf(sandboxId)) {
            out.add(containerStatus(c));
        }
        return out;
    }

    public synchronized List<PodSandbox> listPodSandbox(PodSandboxFilter filter) {
        List<PodSandbox> out = new ArrayList<>();
        for (SandboxRecord s : sandboxes.values()) {
            if (!filter.getId().isEmpty() && !s.id.startsWith(filter.getId())) {
                continue;
            }
            if (filter.hasState() && filter.getState().getState() != s.state) {
                continue;
            }
            if (!matches(filter.getLabelSelectorMap(), s.config.getLabelsMap())) {
                continue;
            }
            out.add(
                    PodSandbox.newBuilder()
                            .setId(s.id)
                            .setMetadata(s.config.getMetadata())
                            .setState(s.state)
                            .setCreatedAt(s.createdAt)
                            .putAllLabels(s.config.getLabelsMap())
                            .putAllAnnotations(s.config.getAnnotationsMap())
                            .setRuntimeHandler(s.runtimeHandler)
                            .build());
        }
        return out;
    }

    public synchronized void updatePodSandboxResources(
            String id, LinuxContainerResources resources) {
        sandbox(id).resources = resources;
    }

    public synchronized List<SandboxRecord> sandboxes() {
        return List.copyOf(sandboxes.values());
    }

    /** The sandbox, or null when there is none with this id. */
    synchronized SandboxRecord sandboxOrNull(String id) {
        return sandboxes.get(id);
    }

    public synchronized SandboxRecord sandbox(String id) {
        SandboxRecord s = sandboxes.get(id);
        if (s == null) {
            throw notFound("an error occurred when try to find sandbox \"" + id + "\": not found");
        }
        return s;
    }

    // ---------------------------------------------------------------- containers

    public synchronized String createContainer(
            String sandboxId, ContainerConfig config, PodSandboxConfig sandboxConfig) {
        return createContainer(sandboxId, config, sandboxConfig, newId());
    }

    /** Creates a container under an id reserved with {@link #newObjectId()}. */
    public synchronized String createContainer(
            String sandboxId, ContainerConfig config, PodSandboxConfig sandboxConfig, String id) {
        return createContainer(sandboxId, config, config, sandboxConfig, id);
    }

    /**
     * Creates a container whose hooks changed its config, as an NRI runtime does: {@code applied} is
     * what the container runs with (its environment, mounts, devices, resources, the OCI spec that
     * {@code ContainerStatus}'s verbose {@code info} shows), {@code requested} what CRI asked for and
     * {@code ContainerStatus} reports (annotations, mounts, resources), as containerd reports it.
     */
    public synchronized String createContainer(
            String sandboxId,
            ContainerConfig requested,
            ContainerConfig config,
            PodSandboxConfig sandboxConfig,
            String id) {
        SandboxRecord s = sandboxes.get(sandboxId);
        if (s == null) {
            throw notFound("failed to find sandbox id \"" + sandboxId + "\": not found");
        }
        if (!config.hasMetadata() || config.getMetadata().getName().isEmpty()) {
            throw invalid("container config must include metadata with a name");
        }
        if (s.state != PodSandboxState.SANDBOX_READY) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "sandbox \""
                                    + sandboxId
                                    + "\" is not ready (SANDBOX_NOTREADY): cannot create a container in a stopped pod sandbox")
                    .asRuntimeException();
        }
        String ref = config.getImage().getImage();
        ImageRecord image =
                resolveImage(ref)
                        .orElseThrow(
                                () ->
                                        notFound(
                                                "failed to resolve image \""
                                                        + ref
                                                        + "\": not found (pull it first)"));
        String name =
                config.getMetadata().getName()
                        + "_"
                        + sandboxName(s.config)
                        + "_"
                        + config.getMetadata().getAttempt();
        for (ContainerRecord c : containers.values()) {
            if (c.sandboxId.equals(sandboxId)
                    && c.config.getMetadata().getName().equals(config.getMetadata().getName())
                    && c.config.getMetadata().getAttempt() == config.getMetadata().getAttempt()) {
                throw Status.ALREADY_EXISTS
                        .withDescription(
                                "failed to reserve container name \""
                                        + name
                                        + "\": name is reserved for \""
                                        + c.id
                                        + "\"")
                        .asRuntimeException();
            }
        }
        String logDir =
                sandboxConfig.getLogDirectory().isEmpty()
                        ? s.config.getLogDirectory()
                        : sandboxConfig.getLogDirectory();
        String logPath =
                logDir.isEmpty() || config.getLogPath().isEmpty()
                        ? ""
                        : logDir + "/" + config.getLogPath();
        ContainerRecord c = new ContainerRecord(id, sandboxId, config, image.id, logPath, now());
        c.requested(requested);
        containers.put(id, c);
        publish(id, s, ContainerEventType.CONTAINER_CREATED_EVENT);
        return id;
    }

    public synchronized void startContainer(String id) {
        ContainerRecord c = container(id);
        if (c.state != ContainerState.CONTAINER_CREATED) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "failed to set starting state for container \""
                                    + id
                                    + "\": container is in "
                                    + c.state
                                    + " state")
                    .asRuntimeException();
        }
        SandboxRecord s = sandboxes.get(c.sandboxId);
        if (s == null || s.state != PodSandboxState.SANDBOX_READY) {
            throw Status.FAILED_PRECONDITION
                    .withDescription("sandbox container \"" + c.sandboxId + "\" is not running")
                    .asRuntimeException();
        }
        c.state = ContainerState.CONTAINER_RUNNING;
        c.startedAt = now();
        c.pid = nextPid++;
        publish(id, s, ContainerEventType.CONTAINER_STARTED_EVENT);
    }

    /** Stops a running container: a positive timeout is a graceful stop (exit 0), zero a kill (exit 137). */
    public synchronized void stopContainer(String id, long timeoutSeconds) {
        ContainerRecord c = container(id);
        if (c.state != ContainerState.CONTAINER_RUNNING) {
            return; // containerd: stop only acts on a started container
        }
        if (timeoutSeconds > 0) {
            exit(c, 0, "Completed", "");
        } else {
            exit(c, KILLED_EXIT_CODE, "Error", "");
        }
    }

    /** Makes a running container exit by itself with the given code, as its process would. */
    public synchronized void exitContainer(String id, int exitCode) {
        ContainerRecord c = container(id);
        if (c.state != ContainerState.CONTAINER_RUNNING) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "container \""
                                    + id
                                    + "\" is in "
                                    + c.state
                                    + " state, only a running container can exit")
                    .asRuntimeException();
        }
        exit(c, exitCode, exitCode == 0 ? "Completed" : "Error", "");
    }

    private void exit(ContainerRecord c, int exitCode, String reason, String message) {
        c.state = ContainerState.CONTAINER_EXITED;
        c.finishedAt = now();
        c.exitCode = exitCode;
        c.reason = reason;
        c.message = message;
        c.pid = 0;
        publish(c.id, sandboxes.get(c.sandboxId), ContainerEventType.CONTAINER_STOPPED_EVENT);
    }

    public synchronized void removeContainer(String id) {
        ContainerRecord c = containers.get(id);
        if (c == null) {
            return; // containerd: removing a container that does not exist succeeds
        }
        if (c.state == ContainerState.CONTAINER_RUNNING) {
            exit(c, KILLED_EXIT_CODE, "Error", "");
        }
        containers.remove(id);
        publish(id, sandboxes.get(c.sandboxId), ContainerEventType.CONTAINER_DELETED_EVENT);
    }

    public synchronized ContainerStatus containerStatus(String id) {
        return containerStatus(container(id));
    }

    public synchronized List<Container> listContainers(ContainerFilter filter) {
        List<Container> out = new ArrayList<>();
        for (ContainerRecord c : containers.values()) {
            if (!filter.getId().isEmpty() && !c.id.startsWith(filter.getId())) {
                continue;
            }
            if (filter.hasState() && filter.getState().getState() != c.state) {
                continue;
            }
            if (!filter.getPodSandboxId().isEmpty()
                    && !c.sandboxId.startsWith(filter.getPodSandboxId())) {
                continue;
            }
            if (!matches(filter.getLabelSelectorMap(), c.config.getLabelsMap())) {
                continue;
            }
            out.add(
                    Container.newBuilder()
                            .setId(c.id)
                            .setPodSandboxId(c.sandboxId)
                            .setMetadata(c.config.getMetadata())
                            .setImage(c.config.getImage())
                            .setImageRef(c.imageId)
                            .setImageId(c.imageId)
                            .setState(c.state)
                            .setCreatedAt(c.createdAt)
                            .putAllLabels(c.requested.getLabelsMap())
                            .putAllAnnotations(c.statusAnnotations)
                            .build());
        }
        return out;
    }

    public synchronized void updateContainerResources(
            String id, LinuxContainerResources linux, Map<String, String> annotations) {
        ContainerRecord c = container(id);
        if (linux != null) {
            c.resources = linux;
            c.statusResources = linux;
        }
        c.annotations.putAll(annotations);
        c.statusAnnotations.putAll(annotations);
    }

    /** The {@code info} entry of a verbose ContainerStatus, as containerd's (see {@link ContainerInfoJson}). */
    public synchronized String containerInfo(String id) {
        ContainerRecord c = container(id);
        return ContainerInfoJson.of(c, sandboxes.get(c.sandboxId));
    }

    public synchronized void reopenContainerLog(String id) {
        ContainerRecord c = container(id);
        if (c.state != ContainerState.CONTAINER_RUNNING) {
            throw Status.FAILED_PRECONDITION
                    .withDescription("container \"" + id + "\" is not running")
                    .asRuntimeException();
        }
    }

    /** The container, which must be running (for exec, attach and ExecSync). */
    public synchronized ContainerRecord runningContainer(String id) {
        ContainerRecord c = container(id);
        if (c.state != ContainerState.CONTAINER_RUNNING) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "container \""
                                    + id
                                    + "\" is in "
                                    + c.state
                                    + " state; it must be running")
                    .asRuntimeException();
        }
        return c;
    }

    /** The container, or null when there is none with this id. */
    synchronized ContainerRecord containerOrNull(String id) {
        return containers.get(id);
    }

    public synchronized ContainerRecord container(String id) {
        ContainerRecord c = containers.get(id);
        if (c == null) {
            throw notFound(
                    "an error occurred when try to find container \"" + id + "\": not found");
        }
        return c;
    }

    public synchronized List<ContainerRecord> containers() {
        return List.copyOf(containers.values());
    }

    public synchronized List<ContainerRecord> containersOf(String sandboxId) {
        List<ContainerRecord> out = new ArrayList<>();
        for (ContainerRecord c : containers.values()) {
            if (c.sandboxId.equals(sandboxId)) {
                out.add(c);
            }
        }
        return out;
    }

    // ---------------------------------------------------------------- images

    /** Pulls (records) an image and returns its digest-pinned reference, {@code repo@sha256:...}. */
    public synchronized String pullImage(String reference) {
        ImageName name = parse(reference);
        String manifestDigest =
                name.digest() != null
                        ? name.digest()
                        : "sha256:" + sha256("manifest\n" + name.normalized());
        return addImage(name, manifestDigest, sizeFor(manifestDigest));
    }

    /**
     * What pulling {@code reference} stores, without storing it.
     *
     * @param name the parsed reference
     * @param manifestDigest the manifest's digest (the reference's own digest when it has one)
     * @param configDigest the image id
     * @param size the image's size, the sum of its layers
     */
    public record ImagePlan(
            ImageName name, String manifestDigest, String configDigest, long size) {}

    /** Plans a pull of {@code reference}; fails with INVALID_ARGUMENT as {@link #pullImage} does. */
    public ImagePlan planPull(String reference) {
        ImageName name = parse(reference);
        String manifestDigest =
                name.digest() != null
                        ? name.digest()
                        : "sha256:" + sha256("manifest\n" + name.normalized());
        return new ImagePlan(
                name,
                manifestDigest,
                "sha256:" + sha256("config\n" + manifestDigest),
                sizeFor(manifestDigest));
    }

    /** Adds an image as if pulled; returns its digest-pinned reference. */
    public synchronized String addImage(String reference, long size) {
        ImageName name = parse(reference);
        String manifestDigest =
                name.digest() != null
                        ? name.digest()
                        : "sha256:" + sha256("manifest\n" + name.normalized());
        return addImage(name, manifestDigest, size);
    }

    private String addImage(ImageName name, String manifestDigest, long size) {
        String id = "sha256:" + sha256("config\n" + manifestDigest);
        ImageRecord image = images.computeIfAbsent(id, k -> new ImageRecord(k, size));
        String repoTag = name.repoTag();
        if (repoTag != null) {
            for (ImageRecord other : images.values()) {
                if (other != image) {
                    other.repoTags.remove(repoTag); // a tag names one image: pulling moves it
                }
            }
            image.repoTags.add(repoTag);
        }
        String pinned = name.repository() + "@" + manifestDigest;
        image.repoDigests.add(pinned);
        return pinned;
    }

    public synchronized Optional<Image> imageStatus(String reference) {
        return resolveImage(reference).map(ImageRecord::toImage);
    }

    public synchronized List<Image> listImages(String filterReference) {
        List<Image> out = new ArrayList<>();
        if (filterReference.isEmpty()) {
            images.values().forEach(i -> out.add(i.toImage()));
        } else {
            resolveImage(filterReference).ifPresent(i -> out.add(i.toImage()));
        }
        return out;
    }

    public synchronized void removeImage(String reference) {
        resolveImage(reference)
                .ifPresent(
                        i -> images.remove(i.id)); // containerd: removing a missing image succeeds
    }

    public synchronized void pinImage(String reference, boolean pinned) {
        ImageRecord image =
                resolveImage(reference)
                        .orElseThrow(() -> notFound("image \"" + reference + "\" not found"));
        image.pinned = pinned;
    }

    public synchronized long imagesSize() {
        return images.values().stream().mapToLong(i -> i.size).sum();
    }

    public synchronized int imageCount() {
        return images.size();
    }

    /** Finds an image by id, by the id's hex alone, by repo:tag or by repo@digest, any of them unnormalised. */
    public synchronized Optional<ImageRecord> resolveImage(String reference) {
        if (reference == null || reference.isEmpty()) {
            return Optional.empty();
        }
        ImageRecord byId =
                images.get(reference.startsWith("sha256:") ? reference : "sha256:" + reference);
        if (byId != null) {
            return Optional.of(byId);
        }
        ImageName name;
        try {
            name = ImageName.parse(reference);
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        for (ImageRecord i : images.values()) {
            if (name.digest() != null
                    ? i.repoDigests.contains(name.repository() + "@" + name.digest())
                    : i.repoTags.contains(name.repoTag())) {
                return Optional.of(i);
            }
        }
        return Optional.empty();
    }

    /** Runs {@code action} (under the state's lock) whenever {@link #reset()} forgets everything. */
    void onReset(Runnable action) {
        resetActions.add(action);
    }

    /** Forgets every sandbox, container and image (no events are sent; container processes end). */
    public synchronized void reset() {
        resetActions.forEach(Runnable::run);
        sandboxes.clear();
        containers.clear();
        images.clear();
        podCidr = "";
    }

    // ---------------------------------------------------------------- runtime config

    public synchronized void setPodCidr(String cidr) {
        podCidr = cidr;
    }

    public synchronized String podCidr() {
        return podCidr;
    }

    // ---------------------------------------------------------------- message builders

    PodSandboxStatus sandboxStatus(SandboxRecord s) {
        NamespaceOption ns = s.config.getLinux().getSecurityContext().getNamespaceOptions();
        return PodSandboxStatus.newBuilder()
                .setId(s.id)
                .setMetadata(s.config.getMetadata())
                .setState(s.state)
                .setCreatedAt(s.createdAt)
                .setNetwork(PodSandboxNetworkStatus.newBuilder().setIp(s.ip))
                .setLinux(
                        LinuxPodSandboxStatus.newBuilder()
                                .setNamespaces(Namespace.newBuilder().setOptions(ns)))
                .putAllLabels(s.config.getLabelsMap())
                .putAllAnnotations(s.config.getAnnotationsMap())
                .setRuntimeHandler(s.runtimeHandler)
                .build();
    }

    ContainerStatus containerStatus(ContainerRecord c) {
        ImageSpec spec = c.config.getImage();
        String imageRef = c.imageId;
        ImageRecord image = images.get(c.imageId);
        if (image != null) {
            // like containerd: show the first repo tag as the image and the first repo digest as
            // the image ref
            if (!image.repoTags.isEmpty()) {
                spec = ImageSpec.newBuilder().setImage(image.repoTags.iterator().next()).build();
            }
            if (!image.repoDigests.isEmpty()) {
                imageRef = image.repoDigests.iterator().next();
            }
        }
        ContainerStatus.Builder b =
                ContainerStatus.newBuilder()
                        .setId(c.id)
                        .setMetadata(c.config.getMetadata())
                        .setState(c.state)
                        .setCreatedAt(c.createdAt)
                        .setStartedAt(c.startedAt)
                        .setFinishedAt(c.finishedAt)
                        .setExitCode(c.exitCode)
                        .setImage(spec)
                        .setImageRef(imageRef)
                        .setImageId(c.imageId)
                        .setReason(c.reason)
                        .setMessage(c.message)
                        .putAllLabels(c.requested.getLabelsMap())
                        .putAllAnnotations(c.statusAnnotations)
                        .addAllMounts(c.requested.getMountsList())
                        .setLogPath(c.logPath)
                        .setStopSignal(c.requested.getStopSignal());
        if (c.statusResources != null) {
            b.setResources(ContainerResources.newBuilder().setLinux(c.statusResources));
        }
        return b.build();
    }

    private void publish(String id, SandboxRecord sandbox, ContainerEventType type) {
        if (listeners.isEmpty()) {
            return;
        }
        ContainerEventResponse.Builder event =
                ContainerEventResponse.newBuilder()
                        .setContainerId(id)
                        .setContainerEventType(type)
                        .setCreatedAt(now());
        if (sandbox != null) {
            event.setPodSandboxStatus(sandboxStatus(sandbox));
            for (ContainerRecord c : containers.values()) {
                if (c.sandboxId.equals(sandbox.id)) {
                    event.addContainersStatuses(containerStatus(c));
                }
            }
        }
        ContainerEventResponse e = event.build();
        for (Consumer<ContainerEventResponse> l : listeners) {
            l.accept(e);
        }
    }

    // ---------------------------------------------------------------- helpers

    private static boolean matches(Map<String, String> selector, Map<String, String> labels) {
        for (Map.Entry<String, String> e : selector.entrySet()) {
            if (!e.getValue().equals(labels.get(e.getKey()))) {
                return false;
            }
        }
        return true;
    }

    private static String sandboxName(PodSandboxConfig config) {
        var m = config.getMetadata();
        return m.getName() + "_" + m.getNamespace() + "_" + m.getUid() + "_" + m.getAttempt();
    }

    private static ImageName parse(String reference) {
        try {
            return ImageName.parse(reference);
        } catch (IllegalArgumentException e) {
            throw invalid(
                    "failed to parse image reference \"" + reference + "\": " + e.getMessage());
        }
    }

    private static long sizeFor(String digest) {
        // plausible compressed image sizes: 2 MiB .. 120 MiB, stable per digest
        long h = Long.parseUnsignedLong(digest.substring(7, 22), 16);
        return 2L * 1024 * 1024 + Math.floorMod(h, 118L * 1024 * 1024);
    }

    /** A fresh id for a sandbox or container, as the fake gives them (64 hex characters). */
    public synchronized String newObjectId() {
        return newId();
    }

    private String newId() {
        byte[] b = new byte[32];
        random.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    static String sha256(String s) {
        try {
            return HexFormat.of()
                    .formatHex(
                            MessageDigest.getInstance("SHA-256")
                                    .digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static StatusRuntimeException notFound(String message) {
        return Status.NOT_FOUND.withDescription(message).asRuntimeException();
    }

    static StatusRuntimeException invalid(String message) {
        return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
    }

    static ContainerMetadata metadata(ContainerRecord c) {
        return c.config.getMetadata();
    }
}

package io.cri4j.testing.real.internal;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Marks each harness temp dir with the JVM that owns it, and removes the dirs (and kills the
 * daemons, containers and shims) of harness JVMs that died without cleaning up (SIGKILL, a
 * crashed fork). A dir whose owner still runs, or that has no owner mark, is never touched.
 */
public final class StaleHarnessDirs {

    /** Prefix of a containerd temp dir. */
    public static final String CONTAINERD_PREFIX = "cri4j-ctrd-";

    /** Prefix of a registry temp dir. */
    public static final String REGISTRY_PREFIX = "cri4j-registry-";

    /** Prefix of a dockerd temp dir. */
    public static final String DOCKERD_PREFIX = "cri4j-dk-";

    /** Prefix of the temp dir of built test images. */
    public static final String IMAGES_PREFIX = "cri4j-images-";

    private static final Logger LOG = LoggerFactory.getLogger(StaleHarnessDirs.class);
    private static final String OWNER_FILE = "owner";
    private static final AtomicBoolean REAPED = new AtomicBoolean();

    private StaleHarnessDirs() {}

    /** Records this JVM (pid and start time) as the owner of {@code dir}. */
    public static void markOwned(Path dir) {
        ProcessHandle self = ProcessHandle.current();
        String mark =
                self.pid() + " " + self.info().startInstant().map(Instant::toEpochMilli).orElse(0L);
        try {
            Files.writeString(dir.resolve(OWNER_FILE), mark + "\n");
        } catch (IOException e) {
            LOG.warn("cannot mark {} as owned: {}", dir, e.toString());
        }
    }

    /** Reaps stale harness dirs in the temp dir, once per JVM. */
    public static void reapOnce() {
        if (REAPED.compareAndSet(false, true)) {
            for (Path base : TempDirs.bases()) {
                reap(base);
            }
        }
    }

    /** Reaps stale harness dirs directly under {@code tmp}. */
    public static void reap(Path tmp) {
        for (Path dir : ContainerdLeftovers.list(tmp)) {
            String name = dir.getFileName().toString();
            boolean containerd = name.startsWith(CONTAINERD_PREFIX);
            boolean dockerd = name.startsWith(DOCKERD_PREFIX);
            if ((containerd
                            || dockerd
                            || name.startsWith(REGISTRY_PREFIX)
                            || name.startsWith(IMAGES_PREFIX))
                    && ownerIsGone(dir)) {
                LOG.warn("removing {} left behind by a harness JVM that is gone", dir);
                if (containerd) {
                    reapContainerd(dir);
                }
                if (dockerd) {
                    // dockerd first: it would restart the containerd we kill
                    killAll(processesNaming(dir, dir.resolve("dockerd.pid")));
                }
                killAll(ContainerdLeftovers.processesUsing(dir));
                TempDirs.deleteRecursively(dir);
            }
        }
    }

    /** Whether the owner mark of {@code dir} names a JVM that no longer runs. */
    static boolean ownerIsGone(Path dir) {
        Path mark = dir.resolve(OWNER_FILE);
        if (!Files.isRegularFile(mark)) {
            return false;
        }
        try {
            String[] fields = Files.readString(mark, StandardCharsets.UTF_8).strip().split(" ");
            long pid = Long.parseLong(fields[0]);
            long started = Long.parseLong(fields[1]);
            Optional<ProcessHandle> owner = ProcessHandle.of(pid);
            return owner.isEmpty()
                    || owner.get()
                            .info()
                            .startInstant()
                            .map(i -> i.toEpochMilli() != started)
                            .orElse(false);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** The processes using {@code dir} whose command line names {@code file}. */
    private static List<Long> processesNaming(Path dir, Path file) {
        String name = file.toString();
        return ContainerdLeftovers.processesUsing(dir).stream()
                .filter(
                        pid ->
                                ProcessHandle.of(pid)
                                        .flatMap(h -> h.info().commandLine())
                                        .map(c -> c.contains(name))
                                        .orElse(false))
                .toList();
    }

    private static void reapContainerd(Path dir) {
        // containerd first (it would restart what we delete), then its containers and shims
        killAll(processesNaming(dir, dir.resolve("config.toml")));
        String network = "";
        String bridge = "";
        try {
            JsonObject conf =
                    JsonParser.parseString(
                                    Files.readString(dir.resolve("cni/net.d/10-cri4j.conflist")))
                            .getAsJsonObject();
            network = conf.get("name").getAsString();
            bridge =
                    conf.getAsJsonArray("plugins")
                            .get(0)
                            .getAsJsonObject()
                            .get("bridge")
                            .getAsString();
        } catch (IOException | RuntimeException e) {
            LOG.debug("no CNI config in {}", dir);
        }
        ContainerdLeftovers.clean(
                dir,
                "k8s.io",
                network.isEmpty() ? "cri4j-none" : network,
                bridge.isEmpty() ? "cri4jnone" : bridge);
    }

    private static void killAll(List<Long> pids) {
        for (long pid : pids) {
            ProcessHandle.of(pid)
                    .ifPresent(
                            h -> {
                                h.destroyForcibly();
                                try {
                                    h.onExit().get(5, TimeUnit.SECONDS);
                                } catch (Exception e) {
                                    LOG.warn(
                                            "pid {} did not exit after SIGKILL: {}",
                                            pid,
                                            e.toString());
                                }
                            });
        }
    }
}

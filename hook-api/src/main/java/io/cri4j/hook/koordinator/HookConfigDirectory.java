package io.cri4j.hook.koordinator;

import io.cri4j.hook.HookChain;
import io.cri4j.hook.Hooks;
import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a hook config directory (Koordinator's default {@code /etc/runtime/hookserver.d}) with
 * a {@link WatchService}: every {@code *.json} file is one remote hook. Adding, changing,
 * atomically renaming into place and deleting files take effect without restart. A malformed
 * file is reported (logged once per bad version, and in {@link Snapshot#errors()}) and ignored:
 * if an earlier version of the same file was good, that version stays in force. A change swaps
 * the hooks atomically: a call already dispatched goes on with the hooks, and channels, it
 * started with, and the channel of a replaced or removed hook is shut down once no call uses
 * it any more. Only regular files (or links to
 * them) of at most {@link #MAX_FILE_BYTES} are read; a FIFO, device, directory or larger file
 * is reported like a malformed one, and no file can block the watch thread. Each good file is
 * a {@link RemoteRuntimeHook}; a {@link HookChain} calls them with {@code
 * source(dir::hold, dir::release)} (see {@link #hold()}). Owns a watch thread, a reader thread
 * and one channel per hook: close it.
 */
public final class HookConfigDirectory implements Supplier<List<RemoteRuntimeHook>>, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HookConfigDirectory.class);

    /** Koordinator's default directory. */
    public static final Path DEFAULT_DIR = Path.of("/etc/runtime/hookserver.d");

    /** The largest config file read (a hook config is a few hundred bytes). */
    public static final int MAX_FILE_BYTES = 64 * 1024;

    /**
     * The directory's state after a scan.
     *
     * @param generation counts scans, starting at 1
     * @param configs the configs in force, by file name
     * @param errors the problem of each file that failed to parse in this scan, by file name
     */
    public record Snapshot(
            long generation, Map<String, HookConfig> configs, Map<String, String> errors) {
        public Snapshot {
            configs = Map.copyOf(configs);
            errors = Map.copyOf(errors);
        }
    }

    private final Path dir;
    private final WatchService watcher;
    private final Thread thread;
    private final List<Consumer<Snapshot>> listeners = new CopyOnWriteArrayList<>();
    private final Map<String, RemoteRuntimeHook> hooks = new HashMap<>();
    private final ConfigFileReader reader = new ConfigFileReader();

    /** The version of each bad file last warned about (its problem and content). */
    private final Map<String, String> warnedVersion = new HashMap<>();

    private final Map<String, Long> warned = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile Generation current = new Generation(List.of());
    private volatile Snapshot snapshot = new Snapshot(0, Map.of(), Map.of());
    private long generation;
    private boolean closed;

    private HookConfigDirectory(Path dir) throws IOException {
        this.dir = dir;
        try {
            Files.createDirectories(dir);
        } catch (java.nio.file.FileAlreadyExistsException e) {
            throw new IOException(
                    "cannot watch hook config directory "
                            + dir
                            + ": "
                            + e.getFile()
                            + " exists and is not a directory",
                    e);
        } catch (IOException e) {
            throw new IOException(
                    "cannot watch hook config directory "
                            + dir
                            + ": "
                            + io.cri4j.cri.internal.IoErrors.reason(e),
                    e);
        }
        this.watcher = dir.getFileSystem().newWatchService();
        dir.register(
                watcher,
                StandardWatchEventKinds.ENTRY_CREATE,
                StandardWatchEventKinds.ENTRY_MODIFY,
                StandardWatchEventKinds.ENTRY_DELETE);
        rescan();
        this.thread = new Thread(this::watchLoop, "cri4j-hook-config-" + dir.getFileName());
        thread.setDaemon(true);
        thread.start();
    }

    /** Reads {@code dir} (created if missing) and starts watching it. */
    public static HookConfigDirectory watch(Path dir) throws IOException {
        return new HookConfigDirectory(dir);
    }

    /** The directory watched. */
    public Path directory() {
        return dir;
    }

    /** The hooks in force, one per good config file (the same list until they change). */
    @Override
    public List<RemoteRuntimeHook> get() {
        return current.hooks;
    }

    /**
     * The hooks in force, held with their channels until {@link #release} gets this list back:
     * a change of the directory meanwhile swaps the hooks for later callers, and the channel of a
     * replaced or removed hook closes only once no holder has it. How a {@link HookChain} calls
     * the directory's hooks so that every event finishes on the hooks and channels it started with:
     * {@code HookChain.builder().source(dir::hold, dir::release)}.
     */
    public List<RemoteRuntimeHook> hold() {
        return acquire().hooks;
    }

    /**
     * Gives back a list {@link #hold()} returned (once per hold).
     *
     * @throws IllegalArgumentException for a list {@link #hold()} did not return
     */
    public void release(List<RemoteRuntimeHook> held) {
        if (!(held instanceof Generation.Hooks h)) {
            throw new IllegalArgumentException("not a list this directory handed out");
        }
        h.generation().release();
    }

    /**
     * The hooks in force at one time. A caller holds the generation it started with
     * ({@link #acquire()}) until it ends; a hook's channel is shut down once no generation that
     * has the hook is held any more, so calls in flight finish on the channel they started on.
     */
    static final class Generation {
        final Hooks hooks;

        /** The directory's own hold while in force, plus one per caller using it. */
        private final java.util.concurrent.atomic.AtomicInteger holds =
                new java.util.concurrent.atomic.AtomicInteger(1);

        /** The generation's hooks, as a list that knows its generation. */
        static final class Hooks extends java.util.AbstractList<RemoteRuntimeHook>
                implements java.util.RandomAccess {
            private final List<RemoteRuntimeHook> list;
            private final Generation generation;

            Hooks(List<RemoteRuntimeHook> list, Generation generation) {
                this.list = list;
                this.generation = generation;
            }

            Generation generation() {
                return generation;
            }

            @Override
            public RemoteRuntimeHook get(int i) {
                return list.get(i);
            }

            @Override
            public int size() {
                return list.size();
            }
        }

        Generation(List<RemoteRuntimeHook> hooks) {
            this.hooks = new Hooks(List.copyOf(hooks), this);
            hooks.forEach(RemoteRuntimeHook::retain);
        }

        private boolean tryHold() {
            for (int n = holds.get(); n > 0; n = holds.get()) {
                if (holds.compareAndSet(n, n + 1)) {
                    return true;
                }
            }
            return false; // retired and released by everyone: the directory has a newer one
        }

        /** Gives back one hold; the last one lets go of the hooks. */
        void release() {
            if (holds.decrementAndGet() == 0) {
                hooks.forEach(RemoteRuntimeHook::release);
            }
        }
    }

    /** The hooks in force, held until {@link Generation#release()}. */
    Generation acquire() {
        while (true) {
            Generation g = current;
            if (g.tryHold()) {
                return g;
            }
        }
    }

    /** The state after the latest scan. */
    public Snapshot snapshot() {
        return snapshot;
    }

    /** Called after every scan (from the watch thread), and once now with the current state. */
    public void addListener(Consumer<Snapshot> listener) {
        listeners.add(listener);
        listener.accept(snapshot);
    }

    private void watchLoop() {
        try {
            while (true) {
                WatchKey key = watcher.take();
                key.pollEvents(); // every event, overflow included, leads to a full rescan
                try {
                    rescan();
                } catch (RuntimeException e) {
                    LOG.warn(
                            "rescanning hook config directory {} failed; the next change rescans",
                            dir,
                            e);
                }
                if (!key.reset()) {
                    LOG.warn(
                            "hook config directory {} is gone; keeping the last configuration",
                            dir);
                    return;
                }
            }
        } catch (ClosedWatchServiceException | InterruptedException e) {
            // closed
        }
    }

    /** One file's content as read, or the problem that kept it from being read. */
    private record Read(String name, Path file, String text, String problem) {}

    /**
     * Reads every {@code *.json} file again (no lock held: reading is I/O) and swaps the hooks
     * that changed.
     */
    void rescan() {
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*.json")) {
            ds.forEach(files::add);
        } catch (IOException e) {
            LOG.warn("cannot list hook config directory {}: {}", dir, e.toString());
            return;
        }
        List<Read> reads = new ArrayList<>(files.size());
        for (Path f : files) {
            String file = f.getFileName().toString();
            String name = file.substring(0, file.length() - ".json".length());
            try {
                reads.add(new Read(name, f, reader.read(f), null));
            } catch (NoSuchFileException gone) {
                // deleted between listing and reading: the next event rescans
            } catch (IOException e) {
                reads.add(new Read(name, f, null, e.getMessage()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return; // closing
            }
        }
        apply(reads);
    }

    /** Parses what was read and swaps the hooks that changed. */
    private synchronized void apply(List<Read> reads) {
        if (closed) {
            return;
        }
        Map<String, HookConfig> configs = new TreeMap<>();
        Map<String, String> errors = new TreeMap<>();
        for (Read r : reads) {
            try {
                if (r.problem() != null) {
                    throw new IllegalArgumentException(r.problem());
                }
                configs.put(r.name(), HookConfig.parse(r.name(), r.text()));
            } catch (RuntimeException | StackOverflowError e) {
                // nothing a file contains may stop the watcher: every problem is this file's error
                String problem =
                        e instanceof IllegalArgumentException
                                ? e.getMessage()
                                : "cannot be parsed: " + e;
                errors.put(r.name(), problem);
                RemoteRuntimeHook last = hooks.get(r.name());
                if (last != null) {
                    configs.put(r.name(), last.config());
                }
                String version = problem + "\0" + (r.text() == null ? "" : r.text());
                if (!version.equals(warnedVersion.put(r.name(), version))) {
                    // once per bad version of the file, not on every rescan
                    warned.merge(r.name(), 1L, Long::sum);
                    if (last != null) {
                        LOG.warn(
                                "hook config {} is invalid ({}); keeping its last good version",
                                r.file(),
                                problem);
                    } else {
                        LOG.warn("hook config {} is invalid and ignored: {}", r.file(), problem);
                    }
                }
            }
        }
        warnedVersion.keySet().retainAll(errors.keySet());
        boolean changed = false;
        for (String gone : new ArrayList<>(hooks.keySet())) {
            if (!configs.containsKey(gone)) {
                hooks.remove(gone);
                changed = true;
                LOG.info("hook {} removed", gone);
            }
        }
        for (Map.Entry<String, HookConfig> e : configs.entrySet()) {
            RemoteRuntimeHook old = hooks.get(e.getKey());
            if (old == null || !old.config().equals(e.getValue())) {
                hooks.put(e.getKey(), new RemoteRuntimeHook(e.getValue(), true));
                changed = true;
                LOG.info(
                        "hook {} {}: {}",
                        e.getKey(),
                        old == null ? "added" : "changed",
                        e.getValue());
            }
        }
        if (changed) {
            // replaced and removed hooks close once the dispatches that hold them are done
            List<RemoteRuntimeHook> list = new ArrayList<>(hooks.values());
            list.sort(Comparator.comparing(RemoteRuntimeHook::name));
            Generation old = current;
            current = new Generation(List.copyOf(list));
            old.release();
        }
        snapshot = new Snapshot(++generation, configs, errors);
        for (Consumer<Snapshot> l : listeners) {
            try {
                l.accept(snapshot);
            } catch (RuntimeException ex) {
                LOG.warn("hook config listener failed", ex);
            }
        }
    }

    /** How many warnings were logged about the file {@code name}{@code .json} (for tests). */
    long warnings(String name) {
        return warned.getOrDefault(name, 0L);
    }

    /**
     * Stops watching and closes every hook channel (each once the calls using it are done);
     * idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            hooks.clear();
            Generation old = current;
            current = new Generation(List.of());
            old.release(); // channels close as soon as no dispatch uses them
        }
        try {
            watcher.close();
        } catch (IOException ignored) {
            // nothing left to release
        }
        thread.interrupt(); // a read in progress gives up at once
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        reader.close();
    }
}

package io.cri4j.nri.internal.plugin;

import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells when a socket file may have come (back): watches the socket's directory (inotify, through
 * the JDK's {@link WatchService}; a thread blocked in the kernel, no polling) and calls {@code
 * onChange} when an entry of the socket's name is created, or when the watch lost track (an
 * overflow, the directory gone). While the directory does not exist, the nearest existing
 * ancestor is watched instead, and the watch moves down as directories appear. Not API.
 */
final class SocketWatcher implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SocketWatcher.class);

    private final Path socket;
    private final Runnable onChange;
    private final WatchService service;
    private final Thread thread;
    private volatile boolean closed;

    private SocketWatcher(Path socket, Runnable onChange, String threadName) throws IOException {
        this.socket = socket.toAbsolutePath();
        this.onChange = onChange;
        this.service = FileSystems.getDefault().newWatchService();
        this.thread = new Thread(this::run, threadName);
        this.thread.setDaemon(true);
    }

    /**
     * Starts watching; {@code onChange} is called on the watcher's thread and must only hand over.
     *
     * @throws IOException when the platform cannot watch directories
     */
    static SocketWatcher start(Path socket, Runnable onChange, String threadName)
            throws IOException {
        SocketWatcher w = new SocketWatcher(socket, onChange, threadName);
        try {
            w.register();
        } catch (IOException e) {
            w.service.close();
            throw e;
        }
        w.thread.start();
        return w;
    }

    /**
     * Watches the socket's directory, or its nearest existing ancestor, and returns it. A
     * directory nearer the socket that appears while the watch is being set up would send its
     * event to nobody, so the nearest directory is looked up again once the watch is in place
     * and the watch moves down until the two agree.
     */
    private Path register() throws IOException {
        while (true) {
            Path dir = nearestDirectory();
            WatchKey key =
                    dir.register(
                            service,
                            StandardWatchEventKinds.ENTRY_CREATE,
                            StandardWatchEventKinds.ENTRY_DELETE);
            if (nearestDirectory().equals(dir)) {
                return dir;
            }
            key.cancel();
        }
    }

    private Path nearestDirectory() throws IOException {
        Path dir = socket.getParent();
        while (dir != null && !Files.isDirectory(dir)) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IOException("no existing directory above " + socket);
        }
        return dir;
    }

    private void run() {
        try {
            while (!closed) {
                WatchKey key = service.take();
                Path dir = (Path) key.watchable();
                boolean onPath = false;
                for (WatchEvent<?> e : key.pollEvents()) {
                    if (e.kind() == StandardWatchEventKinds.OVERFLOW) {
                        onPath = true;
                    } else if (e.kind() == StandardWatchEventKinds.ENTRY_CREATE) {
                        // the socket itself, or a directory on the way to it
                        onPath |= socket.startsWith(dir.resolve((Path) e.context()));
                    }
                }
                boolean valid = key.reset();
                if (!valid || (onPath && !dir.equals(socket.getParent()))) {
                    // lost the directory, or one nearer the socket appeared: move the watch
                    key.cancel();
                    register();
                }
                if ((onPath || !valid) && !closed) {
                    onChange.run();
                }
            }
        } catch (InterruptedException | ClosedWatchServiceException e) {
            // closed
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                LOG.warn("watching {} stopped: {}", socket.getParent(), e.toString());
            }
        }
    }

    /** Stops watching and ends the thread. Idempotent. */
    @Override
    public void close() {
        closed = true;
        try {
            service.close();
        } catch (IOException e) {
            LOG.debug("closing the watch of {}: {}", socket, e.toString());
        }
    }
}

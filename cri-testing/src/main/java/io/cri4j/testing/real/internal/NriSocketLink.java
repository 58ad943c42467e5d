package io.cri4j.testing.real.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The machine-wide path NRI's Go plugins dial, pointed at a private containerd's NRI socket while
 * this JVM holds the exclusive lock {@value #LOCK} ({@link FileChannel#lock()}, so other test JVMs
 * wait). Holders within this JVM are counted: acquiring for the socket already linked joins,
 * acquiring for another socket waits until the link is free.
 */
public final class NriSocketLink {

    /** Where NRI's Go plugins connect. */
    public static final String LINK = "/var/run/nri/nri.sock";

    /** The machine-wide lock file of tests that point {@link #LINK} somewhere. */
    public static final String LOCK = "/var/run/nri/.cri4j-test.lock";

    private static final Logger LOG = LoggerFactory.getLogger(NriSocketLink.class);
    private static int holders;
    private static Path target;
    private static FileChannel channel;
    private static FileLock lock;

    private NriSocketLink() {}

    /** Links {@link #LINK} to {@code socket} under the lock, waiting for other holders of another socket. */
    public static synchronized void acquire(Path socket) {
        while (holders > 0 && !socket.equals(target)) {
            try {
                NriSocketLink.class.wait();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for " + LINK, e);
            }
        }
        if (holders > 0) {
            holders++;
            return;
        }
        Path link = Path.of(LINK);
        try {
            Files.createDirectories(link.getParent());
            channel =
                    FileChannel.open(
                            Path.of(LOCK), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock l = channel.tryLock();
            if (l == null) {
                LOG.info(
                        "waiting for the machine-wide lock {} (another test uses NRI's Go plugins)",
                        LOCK);
                l = channel.lock();
            }
            lock = l;
            if (Files.exists(link, LinkOption.NOFOLLOW_LINKS) && !Files.isSymbolicLink(link)) {
                unlock();
                Requirements.unavailable(
                        LINK
                                + " is a real socket: a runtime on this machine serves "
                                + "NRI there, so NRI's Go plugins cannot be pointed at a private containerd");
            }
            Files.deleteIfExists(link);
            Files.createSymbolicLink(link, socket);
            target = socket;
            holders = 1;
        } catch (IOException e) {
            unlock();
            throw new UncheckedIOException("cannot link " + LINK + " to " + socket, e);
        }
    }

    /** Leaves; the last holder removes the link and releases the lock. */
    public static synchronized void release() {
        if (holders == 0) {
            return;
        }
        if (--holders > 0) {
            return;
        }
        try {
            Path link = Path.of(LINK);
            if (Files.isSymbolicLink(link)) {
                Files.deleteIfExists(link);
            }
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", LINK, e.toString());
        } finally {
            target = null;
            unlock();
            NriSocketLink.class.notifyAll();
        }
    }

    private static void unlock() {
        try {
            if (lock != null) {
                lock.release();
            }
            if (channel != null) {
                channel.close();
            }
        } catch (IOException e) {
            LOG.warn("cannot release {}: {}", LOCK, e.toString());
        } finally {
            lock = null;
            channel = null;
        }
    }
}

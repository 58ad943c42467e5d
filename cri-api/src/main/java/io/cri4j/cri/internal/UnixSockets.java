package io.cri4j.cri.internal;

import java.io.IOException;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.channels.SocketChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Socket-file rules for unix socket servers. Not API. */
public final class UnixSockets {

    private static final Logger log = LoggerFactory.getLogger(UnixSockets.class);
    private static final int S_IFMT = 0170000;
    private static final int S_IFSOCK = 0140000;

    /** The longest unix socket path ({@code sun_path} holds 108 bytes with the final NUL). */
    private static final int MAX_PATH_BYTES = 107;

    private UnixSockets() {}

    /**
     * The right to serve on one socket path, held by one server at a time: an exclusive lock on
     * {@code <socket>.lock} beside the socket ({@link FileChannel#tryLock()}, a POSIX record lock
     * on Linux), taken before the socket file is touched and kept until {@link #close()}. The
     * socket file this owner bound is remembered by identity (device, inode, times): close
     * removes it only if the path still names that file, then removes the lock file (if it is
     * still the one locked) before releasing the lock, leaving the directory as it found it.
     */
    public static final class Claim implements AutoCloseable {
        private final Path socket;
        private final FileChannel lockChannel;
        private final Path lockFile;
        private final Object lockIdentity;
        private final Path bindPath;
        private Object boundIdentity;
        private boolean closed;

        private Claim(Path socket, FileChannel lockChannel, Path lockFile, Object lockIdentity) {
            this.socket = socket;
            this.lockChannel = lockChannel;
            this.lockFile = lockFile;
            this.lockIdentity = lockIdentity;
            this.bindPath = temporaryPath(socket);
        }

        /**
         * Where to bind: a fresh name beside the socket, renamed into place by {@link #publish}.
         * Netty deletes the path it bound when its server channel closes, whoever owns that path
         * by then; binding elsewhere and renaming leaves it nothing to delete, and clients only
         * see the socket once it listens, with its mode set.
         */
        public Path bindPath() {
            return bindPath;
        }

        /**
         * Gives the bound socket its mode and moves it to the socket path; remembers it as this
         * owner's.
         *
         * @throws IOException when the mode cannot be set or the rename fails
         */
        public synchronized void publish(java.util.Set<PosixFilePermission> mode)
                throws IOException {
            try {
                Files.setPosixFilePermissions(bindPath, mode);
            } catch (IOException e) {
                throw new IOException(
                        "cannot set mode "
                                + PosixFilePermissions.toString(mode)
                                + " on "
                                + socket
                                + ": "
                                + IoErrors.reason(e),
                        e);
            }
            if (!bindPath.equals(socket)) {
                Files.move(bindPath, socket, StandardCopyOption.ATOMIC_MOVE);
            }
            boundIdentity = identity(socket);
        }

        /**
         * Removes the socket file if it is still the one this owner bound, and releases the
         * lock; idempotent.
         */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            try {
                if (!bindPath.equals(socket)) {
                    Files.deleteIfExists(bindPath); // never published
                }
                Object now = identity(socket);
                if (boundIdentity != null && boundIdentity.equals(now)) {
                    Files.deleteIfExists(socket);
                } else if (boundIdentity != null && now != null) {
                    log.info(
                            "not removing {}: it is no longer the socket this server bound",
                            socket);
                }
                if (lockIdentity.equals(identity(lockFile))) {
                    // removed while still locked; a server that opened it meanwhile finds it gone
                    // once it gets the lock, and locks a fresh file
                    Files.deleteIfExists(lockFile);
                }
            } catch (IOException e) {
                log.warn("cannot remove socket file {}: {}", socket, e.toString());
            } finally {
                try {
                    lockChannel.close(); // releases the lock
                } catch (IOException e) {
                    log.debug("closing the lock of {}: {}", socket, e.toString());
                }
            }
        }
    }

    /**
     * A name beside {@code socket} to bind before the rename, no longer than a socket path may
     * be; the socket path itself when there is no room for another name.
     */
    private static Path temporaryPath(Path socket) {
        String name =
                "."
                        + Long.toString(System.nanoTime() ^ ProcessHandle.current().pid() << 40, 36)
                        + java.util.concurrent.ThreadLocalRandom.current().nextInt(1000)
                        + ".bind";
        Path p = socket.resolveSibling(name);
        if (p.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length
                > MAX_PATH_BYTES) {
            return socket;
        }
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            return socket;
        }
        return p;
    }

    /** The lock file of a socket path. */
    public static Path lockFile(Path socket) {
        return socket.resolveSibling(socket.getFileName() + ".lock");
    }

    /** Device, inode and times of a path (not following links); null when it does not exist. */
    private static Object identity(Path p) {
        try {
            BasicFileAttributes a =
                    Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            return java.util.List.of(
                    String.valueOf(a.fileKey()), a.creationTime(), a.lastModifiedTime());
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * Claims a socket path for a server about to bind it: creates parent directories, takes the
     * path's lock (refusing when another server holds it), removes a stale socket file, and
     * refuses when a live server that does not use the lock answers, or the path is something
     * other than a socket. Bind {@link Claim#bindPath()}, then {@link Claim#publish}; close the
     * claim when done.
     *
     * @param socket the socket path
     * @return the claim, holding the lock
     * @throws IOException naming the path and the reason when it cannot be used
     */
    public static Claim claim(Path socket) throws IOException {
        createParents(socket);
        Path lockFile = lockFile(socket);
        for (int attempt = 1; ; attempt++) {
            FileChannel ch;
            try {
                // created 0600 whatever the umask (a umask of 000 would leave it 0666)
                ch =
                        FileChannel.open(
                                lockFile,
                                Set.<java.nio.file.OpenOption>of(
                                        StandardOpenOption.CREATE,
                                        StandardOpenOption.WRITE,
                                        LinkOption.NOFOLLOW_LINKS),
                                PosixFilePermissions.asFileAttribute(LOCK_FILE_MODE));
            } catch (IOException e) {
                throw new IOException(
                        "cannot open the lock file "
                                + lockFile
                                + " of "
                                + socket
                                + ": "
                                + IoErrors.reason(e),
                        e);
            }
            boolean locked = false;
            try {
                FileLock lock;
                try {
                    lock = ch.tryLock();
                } catch (OverlappingFileLockException e) {
                    lock = null; // a server of this process holds it
                }
                if (lock == null) {
                    throw new IOException(
                            "another server already owns "
                                    + socket
                                    + " (it holds the lock "
                                    + lockFile
                                    + "); refusing to take it over");
                }
                Object lockIdentity = identity(lockFile);
                if (lockIdentity == null) {
                    // the owner we waited on removed the file as it closed: lock a fresh one
                    if (attempt < 3) {
                        continue;
                    }
                    throw new IOException(
                            "the lock file " + lockFile + " of " + socket + " keeps vanishing");
                }
                fixMode(lockFile);
                prepareForBind(socket);
                locked = true;
                return new Claim(socket, ch, lockFile, lockIdentity);
            } finally {
                if (!locked) {
                    ch.close();
                }
            }
        }
    }

    /** The mode of a lock file: the owner's only. */
    private static final Set<PosixFilePermission> LOCK_FILE_MODE =
            EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);

    /** A lock file left by an older server with another mode gets the lock file mode. */
    private static void fixMode(Path lockFile) throws IOException {
        if (!Files.getPosixFilePermissions(lockFile, LinkOption.NOFOLLOW_LINKS)
                .equals(LOCK_FILE_MODE)) {
            Files.setPosixFilePermissions(lockFile, LOCK_FILE_MODE);
        }
    }

    private static void createParents(Path socket) throws IOException {
        Path parent = socket.getParent();
        if (parent != null) {
            try {
                Files.createDirectories(parent);
            } catch (FileAlreadyExistsException e) {
                throw new IOException(
                        "cannot create the directory "
                                + parent
                                + " for "
                                + socket
                                + ": "
                                + e.getFile()
                                + " exists and is not a directory",
                        e);
            } catch (IOException e) {
                throw new IOException(
                        "cannot create the directory "
                                + parent
                                + " for "
                                + socket
                                + ": "
                                + IoErrors.reason(e),
                        e);
            }
        }
    }

    /**
     * Makes a socket path ready for bind: creates parent directories, removes a stale socket file,
     * and refuses when a live server answers or the path is something other than a socket.
     * Servers call {@link #claim(Path)}, which does this under the path's lock.
     *
     * @param socket the socket path
     * @throws IOException when the path cannot be used
     */
    public static void prepareForBind(Path socket) throws IOException {
        createParents(socket);
        if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (!isSocket(socket)) {
            throw new FileAlreadyExistsException(
                    socket.toString(),
                    null,
                    "exists and is not a unix socket; refusing to replace it");
        }
        if (isLive(socket)) {
            throw new IOException(
                    "a live server already answers on " + socket + "; refusing to take it over");
        }
        log.info("removing stale socket file {}", socket);
        Files.deleteIfExists(socket);
    }

    /**
     * @param socket a path
     * @return true when it is a unix socket file (not following links)
     * @throws IOException when its attributes cannot be read
     */
    public static boolean isSocket(Path socket) throws IOException {
        try {
            int mode = (Integer) Files.getAttribute(socket, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            return (mode & S_IFMT) == S_IFSOCK;
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            return !Files.isRegularFile(socket, LinkOption.NOFOLLOW_LINKS)
                    && !Files.isDirectory(socket, LinkOption.NOFOLLOW_LINKS)
                    && !Files.isSymbolicLink(socket);
        }
    }

    /**
     * @param socket a socket file
     * @return true when something accepts connections on it
     * @throws IOException when connecting fails for a reason other than "nobody listens"
     */
    public static boolean isLive(Path socket) throws IOException {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(socket));
            return true;
        } catch (ConnectException e) {
            return false;
        } catch (NoSuchFileException e) {
            return false;
        }
    }

    /**
     * Deletes a path if it is a socket file; logs and carries on otherwise.
     *
     * @param socket the socket path
     */
    public static void deleteIfSocket(Path socket) {
        try {
            if (Files.exists(socket, LinkOption.NOFOLLOW_LINKS) && isSocket(socket)) {
                Files.deleteIfExists(socket);
            }
        } catch (IOException e) {
            log.warn("cannot remove socket file {}: {}", socket, e.toString());
        }
    }

    /**
     * @param mode symbolic ({@code rw-rw----}) or octal ({@code 0660}, {@code 660})
     * @return the permissions
     */
    public static Set<PosixFilePermission> parseMode(String mode) {
        if (mode == null) {
            throw new IllegalArgumentException("socket mode is null");
        }
        String m = mode.trim();
        if (m.matches("0?[0-7]{3}")) {
            int bits = Integer.parseInt(m, 8);
            Set<PosixFilePermission> perms = EnumSet.noneOf(PosixFilePermission.class);
            PosixFilePermission[] order = {
                PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
                        PosixFilePermission.OTHERS_READ,
                PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE,
                        PosixFilePermission.GROUP_READ,
                PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
                        PosixFilePermission.OWNER_READ,
            };
            for (int i = 0; i < order.length; i++) {
                if ((bits & (1 << i)) != 0) {
                    perms.add(order[i]);
                }
            }
            return perms;
        }
        try {
            return PosixFilePermissions.fromString(m);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "invalid socket mode '"
                            + mode
                            + "': expected octal like 0660 or symbolic like rw-rw----");
        }
    }
}

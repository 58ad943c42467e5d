package io.cri4j.cri.internal;

import java.io.IOException;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
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

    private UnixSockets() {
    }

    /**
     * Makes a socket path ready for bind: creates parent directories, removes a stale socket file,
     * and refuses when a live server answers or the path is something other than a socket.
     *
     * @param socket the socket path
     * @throws IOException when the path cannot be used
     */
    public static void prepareForBind(Path socket) throws IOException {
        Path parent = socket.getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (!isSocket(socket)) {
            throw new FileAlreadyExistsException(socket.toString(), null,
                    "exists and is not a unix socket; refusing to replace it");
        }
        if (isLive(socket)) {
            throw new IOException("a live server already answers on " + socket + "; refusing to take it over");
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
                PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
                PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
                PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
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
            throw new IllegalArgumentException("invalid socket mode '" + mode
                    + "': expected octal like 0660 or symbolic like rw-rw----");
        }
    }
}

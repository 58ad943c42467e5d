package io.cri4j.cri;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Where a CRI service listens: a unix domain socket or a TCP address.
 *
 * <p>Parsed from the forms kubelet and crictl accept for {@code --container-runtime-endpoint}:
 * <ul>
 *   <li>{@code unix:///run/containerd/containerd.sock} — a unix socket (absolute path);</li>
 *   <li>{@code /run/containerd/containerd.sock} — a bare absolute path, also a unix socket;</li>
 *   <li>{@code tcp://127.0.0.1:10010} or {@code tcp://[::1]:10010} — a TCP address.</li>
 * </ul>
 * Anything else is rejected with an {@link IllegalArgumentException} naming the input and the
 * accepted forms. Instances are immutable; {@link #toString()} gives the canonical URI form.
 */
public final class CriEndpoint {

    /** Linux limits {@code sun_path} to 108 bytes including the terminating NUL. */
    public static final int MAX_UNIX_PATH_BYTES = 107;

    private static final String FORMS =
            "expected unix:///absolute/path, /absolute/path or tcp://host:port";

    private final Path path;
    private final String host;
    private final int port;

    private CriEndpoint(Path path, String host, int port) {
        this.path = path;
        this.host = host;
        this.port = port;
    }

    /**
     * Parses an endpoint string.
     *
     * @param endpoint {@code unix:///path}, {@code /path} or {@code tcp://host:port}
     * @return the endpoint
     * @throws IllegalArgumentException when the string is none of the accepted forms
     */
    public static CriEndpoint parse(String endpoint) {
        if (endpoint == null || endpoint.isBlank()) {
            throw new IllegalArgumentException("CRI endpoint is empty: " + FORMS);
        }
        String s = endpoint.trim();
        if (s.startsWith("/")) {
            return unix(Path.of(s));
        }
        int colon = s.indexOf("://");
        if (colon <= 0) {
            throw new IllegalArgumentException("CRI endpoint '" + s + "' has no scheme: " + FORMS);
        }
        String scheme = s.substring(0, colon);
        String rest = s.substring(colon + 3);
        return switch (scheme) {
            case "unix" -> {
                if (!rest.startsWith("/")) {
                    throw new IllegalArgumentException(
                            "CRI endpoint '"
                                    + s
                                    + "' must name an absolute socket path after unix:// (unix:///path)");
                }
                yield unix(Path.of(rest));
            }
            case "tcp" -> parseTcp(s, rest);
            default ->
                    throw new IllegalArgumentException(
                            "CRI endpoint '"
                                    + s
                                    + "' has unsupported scheme '"
                                    + scheme
                                    + "': "
                                    + FORMS);
        };
    }

    private static CriEndpoint parseTcp(String original, String rest) {
        URI uri;
        try {
            uri = new URI("tcp://" + rest);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException(
                    "CRI endpoint '" + original + "' is not a valid tcp address: " + e.getReason());
        }
        String host = uri.getHost();
        int port = uri.getPort();
        if (host == null
                || host.isEmpty()
                || port < 1
                || port > 65535
                || (uri.getPath() != null && !uri.getPath().isEmpty() && !"/".equals(uri.getPath()))
                || uri.getQuery() != null
                || uri.getUserInfo() != null) {
            throw new IllegalArgumentException(
                    "CRI endpoint '"
                            + original
                            + "' must be tcp://host:port with a port from 1 to 65535");
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new CriEndpoint(null, host, port);
    }

    /**
     * A unix socket endpoint.
     *
     * @param socket absolute path of the socket file
     * @return the endpoint
     * @throws IllegalArgumentException when the path is relative or longer than the kernel allows
     */
    public static CriEndpoint unix(Path socket) {
        Objects.requireNonNull(socket, "socket");
        if (!socket.isAbsolute()) {
            throw new IllegalArgumentException(
                    "unix socket path '" + socket + "' must be absolute");
        }
        Path normal = socket.normalize();
        int bytes = normal.toString().getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_UNIX_PATH_BYTES) {
            throw new IllegalArgumentException(
                    "unix socket path '"
                            + normal
                            + "' is "
                            + bytes
                            + " bytes long; the kernel allows at most "
                            + MAX_UNIX_PATH_BYTES);
        }
        return new CriEndpoint(normal, null, 0);
    }

    /**
     * A TCP endpoint.
     *
     * @param host host name or IP literal
     * @param port port, 0 only for servers that should pick a free port
     * @return the endpoint
     */
    public static CriEndpoint tcp(String host, int port) {
        Objects.requireNonNull(host, "host");
        if (host.isEmpty() || port < 0 || port > 65535) {
            throw new IllegalArgumentException("invalid tcp endpoint " + host + ":" + port);
        }
        return new CriEndpoint(null, host, port);
    }

    /** @return true for a unix socket endpoint, false for TCP */
    public boolean isUnix() {
        return path != null;
    }

    /**
     * @return the socket path of a unix endpoint
     * @throws IllegalStateException for a TCP endpoint
     */
    public Path path() {
        if (path == null) {
            throw new IllegalStateException(this + " is not a unix socket endpoint");
        }
        return path;
    }

    /**
     * @return the host of a TCP endpoint
     * @throws IllegalStateException for a unix endpoint
     */
    public String host() {
        if (host == null) {
            throw new IllegalStateException(this + " is not a tcp endpoint");
        }
        return host;
    }

    /**
     * @return the port of a TCP endpoint
     * @throws IllegalStateException for a unix endpoint
     */
    public int port() {
        if (host == null) {
            throw new IllegalStateException(this + " is not a tcp endpoint");
        }
        return port;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CriEndpoint other
                && Objects.equals(path, other.path)
                && Objects.equals(host, other.host)
                && port == other.port;
    }

    @Override
    public int hashCode() {
        return Objects.hash(path, host, port);
    }

    /** @return {@code unix:///path} or {@code tcp://host:port} (IPv6 hosts in brackets) */
    @Override
    public String toString() {
        if (path != null) {
            return "unix://" + path;
        }
        return "tcp://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
}

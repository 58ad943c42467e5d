package io.cri4j.streaming;

import java.net.SocketAddress;
import java.util.List;
import java.util.Map;

/**
 * Decides whether a streaming HTTP request may proceed once its token was found; a refusal answers
 * HTTP 403 and the token is spent. Called on a network event loop: must not block.
 */
@FunctionalInterface
public interface StreamAuthorizer {
    /** Returns {@code true} to serve the request. */
    boolean authorize(Request request);

    /**
     * What the authorizer sees.
     *
     * @param kind exec, attach or port-forward
     * @param targetId container id (exec, attach) or pod sandbox id (port-forward)
     * @param remoteAddress the peer of the HTTP connection
     * @param headers the request headers, names in lower case
     */
    record Request(
            StreamKind kind,
            String targetId,
            SocketAddress remoteAddress,
            Map<String, List<String>> headers) {
        /** Copies the header map. */
        public Request {
            headers = Map.copyOf(headers);
        }
    }
}

package io.cri4j.streaming.internal;

import java.util.List;

/** Protocol names and header names, exactly as upstream spells them. */
public final class Protocols {
    private Protocols() {}

    public static final String V1 = "channel.k8s.io";
    public static final String V2 = "v2.channel.k8s.io";
    public static final String V3 = "v3.channel.k8s.io";
    public static final String V4 = "v4.channel.k8s.io";
    public static final String V5 = "v5.channel.k8s.io";
    public static final String BASE64_V1 = "base64.channel.k8s.io";
    public static final String BASE64_V4 = "v4.base64.channel.k8s.io";
    public static final String PORT_FORWARD = "portforward.k8s.io";

    /** Subprotocol prefix of SPDY tunnelled in WebSocket (client-go WebsocketsSPDYTunnelingPrefix). */
    public static final String SPDY_TUNNEL_PREFIX = "SPDY/3.1+";

    public static final List<String> DEFAULT_REMOTE_COMMAND = List.of(V5, V4, V3, V2, V1);
    public static final List<String> DEFAULT_PORT_FORWARD = List.of(PORT_FORWARD);

    public static final String HEADER_PROTOCOL_VERSION = "X-Stream-Protocol-Version";
    public static final String HEADER_ACCEPTED_VERSIONS = "X-Accepted-Stream-Protocol-Versions";
    public static final String SPDY_31 = "SPDY/3.1";

    /** SPDY stream header names (lower case on the wire). */
    public static final String STREAM_TYPE = "streamtype";

    public static final String PORT = "port";
    public static final String REQUEST_ID = "requestid";

    public static final String TYPE_ERROR = "error";
    public static final String TYPE_STDIN = "stdin";
    public static final String TYPE_STDOUT = "stdout";
    public static final String TYPE_STDERR = "stderr";
    public static final String TYPE_RESIZE = "resize";
    public static final String TYPE_DATA = "data";

    /** remotecommand version number of a negotiated protocol (v5 served as v4 over SPDY). */
    public static int version(String protocol) {
        return switch (protocol) {
            case V5 -> 5;
            case V4, BASE64_V4 -> 4;
            case V3 -> 3;
            case V2 -> 2;
            default -> 1;
        };
    }
}

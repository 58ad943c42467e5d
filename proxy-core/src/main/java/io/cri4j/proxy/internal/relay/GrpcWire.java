package io.cri4j.proxy.internal.relay;

import io.grpc.Metadata;
import io.grpc.Status;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The gRPC-over-HTTP/2 facts the relay needs where it answers a call itself: response headers,
 * trailers with {@code grpc-status} and a percent-encoded {@code grpc-message}, the
 * {@code grpc-timeout} format, and request headers as {@link Metadata} (binary values base64).
 */
public final class GrpcWire {
    static final AsciiString CONTENT_TYPE = AsciiString.cached("content-type");
    static final AsciiString APPLICATION_GRPC = AsciiString.cached("application/grpc");
    static final AsciiString GRPC_STATUS = AsciiString.cached("grpc-status");
    static final AsciiString GRPC_MESSAGE = AsciiString.cached("grpc-message");
    public static final AsciiString GRPC_TIMEOUT = AsciiString.cached("grpc-timeout");

    /** Headers gRPC itself sets on a call; never handed to interceptors as metadata. */
    private static final Set<String> RESERVED =
            Set.of(
                    "content-type",
                    "te",
                    "grpc-timeout",
                    "grpc-encoding",
                    "grpc-accept-encoding",
                    "user-agent",
                    "grpc-status",
                    "grpc-message");

    private GrpcWire() {}

    /** {@code :status 200} and {@code content-type: application/grpc}. */
    static Http2Headers responseHeaders() {
        return new DefaultHttp2Headers(false).status("200").set(CONTENT_TYPE, APPLICATION_GRPC);
    }

    /**
     * Trailers for {@code status}; with {@code trailersOnly} also the response headers, for a call
     * that ends without a message.
     */
    static Http2Headers trailers(Status status, Metadata extra, boolean trailersOnly) {
        Http2Headers h = trailersOnly ? responseHeaders() : new DefaultHttp2Headers(false);
        if (extra != null) {
            for (String key : extra.keys()) {
                if (RESERVED.contains(key)) {
                    continue;
                }
                if (key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
                    for (byte[] v :
                            extra.getAll(Metadata.Key.of(key, Metadata.BINARY_BYTE_MARSHALLER))) {
                        h.add(key, Base64.getEncoder().withoutPadding().encodeToString(v));
                    }
                } else {
                    for (String v :
                            extra.getAll(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER))) {
                        h.add(key, v);
                    }
                }
            }
        }
        h.set(GRPC_STATUS, Integer.toString(status.getCode().value()));
        if (status.getDescription() != null) {
            h.set(GRPC_MESSAGE, percentEncode(status.getDescription()));
        }
        return h;
    }

    /** gRPC's grpc-message encoding: UTF-8, with bytes outside ' '..'~' and '%' as %XX. */
    static String percentEncode(String message) {
        byte[] utf8 = message.getBytes(StandardCharsets.UTF_8);
        StringBuilder sb = new StringBuilder(utf8.length);
        for (byte b : utf8) {
            int c = b & 0xff;
            if (c < ' ' || c > '~' || c == '%') {
                sb.append('%')
                        .append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            } else {
                sb.append((char) c);
            }
        }
        return sb.toString();
    }

    /**
     * The status a call's last header block ({@code grpc-status}, percent-decoded
     * {@code grpc-message}) says; {@code UNKNOWN} when it says none.
     */
    public static Status status(Http2Headers end) {
        CharSequence code = end == null ? null : end.get(GRPC_STATUS);
        if (code == null) {
            return Status.UNKNOWN.withDescription("the runtime's answer has no grpc-status");
        }
        if (code.length() == 1 && code.charAt(0) == '0' && end.get(GRPC_MESSAGE) == null) {
            return Status.OK;
        }
        Status s;
        try {
            s = Status.fromCodeValue(Integer.parseInt(code.toString()));
        } catch (NumberFormatException e) {
            return Status.UNKNOWN.withDescription(
                    "the runtime's answer has grpc-status '" + code + "'");
        }
        CharSequence message = end.get(GRPC_MESSAGE);
        return message == null ? s : s.withDescription(percentDecode(message));
    }

    /** The inverse of {@link #percentEncode}; a malformed escape is kept as it is. */
    static String percentDecode(CharSequence message) {
        int n = message.length();
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(n);
        for (int i = 0; i < n; i++) {
            char c = message.charAt(i);
            if (c == '%' && i + 2 < n) {
                int hi = Character.digit(message.charAt(i + 1), 16);
                int lo = Character.digit(message.charAt(i + 2), 16);
                if (hi >= 0 && lo >= 0) {
                    out.write(hi << 4 | lo);
                    i += 2;
                    continue;
                }
            }
            out.write(c);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /**
     * The {@code grpc-timeout} value in nanoseconds (1 to 8 digits and a unit of H, M, S, m, u or
     * n), or -1 when there is none.
     *
     * @throws IllegalArgumentException for a malformed value
     */
    public static long timeoutNanos(CharSequence value) {
        if (value == null) {
            return -1;
        }
        int n = value.length();
        if (n < 2 || n > 9) {
            throw new IllegalArgumentException("malformed grpc-timeout '" + value + "'");
        }
        long amount = 0;
        for (int i = 0; i < n - 1; i++) {
            char c = value.charAt(i);
            if (c < '0' || c > '9') {
                throw new IllegalArgumentException("malformed grpc-timeout '" + value + "'");
            }
            amount = amount * 10 + (c - '0');
        }
        TimeUnit unit =
                switch (value.charAt(n - 1)) {
                    case 'H' -> TimeUnit.HOURS;
                    case 'M' -> TimeUnit.MINUTES;
                    case 'S' -> TimeUnit.SECONDS;
                    case 'm' -> TimeUnit.MILLISECONDS;
                    case 'u' -> TimeUnit.MICROSECONDS;
                    case 'n' -> TimeUnit.NANOSECONDS;
                    default ->
                            throw new IllegalArgumentException(
                                    "malformed grpc-timeout '" + value + "': unknown unit");
                };
        return unit.toNanos(amount);
    }

    /** The request's custom headers as gRPC metadata (pseudo and reserved headers left out). */
    public static Metadata metadata(Http2Headers headers) {
        Metadata md = new Metadata();
        for (Map.Entry<CharSequence, CharSequence> e : headers) {
            CharSequence name = e.getKey();
            if (name.length() == 0 || name.charAt(0) == ':') {
                continue;
            }
            String key = name.toString();
            if (RESERVED.contains(key)) {
                continue;
            }
            try {
                if (key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
                    md.put(
                            Metadata.Key.of(key, Metadata.BINARY_BYTE_MARSHALLER),
                            Base64.getDecoder().decode(e.getValue().toString().trim()));
                } else {
                    md.put(
                            Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER),
                            e.getValue().toString());
                }
            } catch (IllegalArgumentException invalid) {
                // a header gRPC cannot carry as metadata (bad name or base64): interceptors never
                // see it
            }
        }
        return md;
    }
}

package io.cri4j.streaming.testing;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A hand-driven HTTP/1.1 connection for abuse tests: raw request, raw WebSocket frames. */
public final class RawConn implements AutoCloseable {
    public final Socket socket;
    public final DataInputStream in;
    public final OutputStream out;
    public int status;
    public final Map<String, List<String>> headers = new LinkedHashMap<>();
    public String body = "";

    public RawConn(URI url) throws IOException {
        socket = new Socket(url.getHost(), url.getPort());
        socket.setSoTimeout(20_000);
        in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        out = socket.getOutputStream();
    }

    /** Sends a request for the URL's path with extra header lines and reads the response head. */
    public RawConn request(String method, URI url, String... headerLines) throws IOException {
        StringBuilder sb = new StringBuilder();
        sb.append(method)
                .append(' ')
                .append(url.getRawPath())
                .append(url.getRawQuery() == null ? "" : "?" + url.getRawQuery())
                .append(" HTTP/1.1\r\n");
        sb.append("Host: ").append(url.getHost()).append(':').append(url.getPort()).append("\r\n");
        for (String h : headerLines) {
            sb.append(h).append("\r\n");
        }
        sb.append("\r\n");
        out.write(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        String line = readLine();
        status = Integer.parseInt(line.split(" ")[1]);
        String h;
        while (!(h = readLine()).isEmpty()) {
            int i = h.indexOf(':');
            headers.computeIfAbsent(
                            h.substring(0, i).trim().toLowerCase(Locale.ROOT),
                            k -> new ArrayList<>())
                    .add(h.substring(i + 1).trim());
        }
        if (headers.containsKey("content-length")) {
            body =
                    new String(
                            in.readNBytes(Integer.parseInt(headers.get("content-length").get(0))),
                            StandardCharsets.UTF_8);
        }
        return this;
    }

    public String header(String name) {
        List<String> v = headers.get(name.toLowerCase(Locale.ROOT));
        return v == null ? null : v.get(0);
    }

    public RawConn webSocket(URI url, String... protocols) throws IOException {
        byte[] key = new byte[16];
        new SecureRandom().nextBytes(key);
        List<String> h =
                new ArrayList<>(
                        List.of(
                                "Upgrade: websocket",
                                "Connection: Upgrade",
                                "Sec-WebSocket-Version: 13",
                                "Sec-WebSocket-Key: " + Base64.getEncoder().encodeToString(key)));
        if (protocols.length > 0) {
            h.add("Sec-WebSocket-Protocol: " + String.join(", ", protocols));
        }
        return request("GET", url, h.toArray(new String[0]));
    }

    private String readLine() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0 && c != '\n') {
            if (c != '\r') {
                b.write(c);
            }
        }
        if (c < 0 && b.size() == 0) {
            throw new IOException("connection closed before the response");
        }
        return b.toString(StandardCharsets.ISO_8859_1);
    }

    /** A WebSocket frame as read. */
    public record Frame(int opcode, byte[] payload) {}

    public Frame readFrame() throws IOException {
        int b0 = in.readUnsignedByte();
        int b1 = in.readUnsignedByte();
        long len = b1 & 0x7F;
        if (len == 126) {
            len = in.readUnsignedShort();
        } else if (len == 127) {
            len = in.readLong();
        }
        byte[] p = in.readNBytes((int) len);
        return new Frame(b0 & 0x0F, p);
    }

    /** Writes a masked binary (opcode 2) or other frame. */
    public void writeFrame(int opcode, byte[] payload) throws IOException {
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write(0x80 | opcode);
        if (payload.length < 126) {
            f.write(0x80 | payload.length);
        } else {
            f.write(0x80 | 126);
            f.write(payload.length >> 8);
            f.write(payload.length & 0xFF);
        }
        byte[] mask = {1, 2, 3, 4};
        f.write(mask);
        for (int i = 0; i < payload.length; i++) {
            f.write(payload[i] ^ mask[i % 4]);
        }
        out.write(f.toByteArray());
        out.flush();
    }

    /** Reads until EOF; returns what was read. */
    public byte[] readToEof() throws IOException {
        return in.readAllBytes();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}

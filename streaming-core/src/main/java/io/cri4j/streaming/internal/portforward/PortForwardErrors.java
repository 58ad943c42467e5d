package io.cri4j.streaming.internal.portforward;

import com.google.gson.JsonObject;

/** The error-stream message of a failed forward (upstream portForwardErrResponse). */
public final class PortForwardErrors {
    private PortForwardErrors() {}

    /** JSON plus newline, as Go's json.Encoder writes it. */
    public static String json(int port, String podSandboxId, Throwable err) {
        String text = err.getMessage() == null ? err.toString() : err.getMessage();
        String lower = text.toLowerCase(java.util.Locale.ROOT);
        // A peer reset or broken pipe keeps the connection (ECONNRESET / EPIPE upstream).
        boolean keep = lower.contains("connection reset") || lower.contains("broken pipe");
        JsonObject o = new JsonObject();
        if (!keep) {
            o.addProperty("closeConnection", true);
        }
        o.addProperty(
                "message",
                "error forwarding port " + port + " to pod " + podSandboxId + ", uid : " + text);
        return o + "\n";
    }
}

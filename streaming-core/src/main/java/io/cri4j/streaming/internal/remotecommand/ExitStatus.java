package io.cri4j.streaming.internal.remotecommand;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.streaming.StreamingException;

/** Interprets the error stream as client-go does (v4+: metav1.Status JSON; v1-v3: plain text). */
final class ExitStatus {
    private ExitStatus() {}

    /** The exit code, or throws for a failure that is not an exit code. */
    static int decode(String body, int version) throws StreamingException {
        if (body.isBlank()) {
            return 0;
        }
        if (version < 4) {
            throw new StreamingException("error executing remote command: " + body.trim(), 0);
        }
        JsonObject o;
        try {
            o = JsonParser.parseString(body).getAsJsonObject();
        } catch (RuntimeException e) {
            throw new StreamingException(
                    "error stream protocol error: " + e.getMessage() + " in " + body, e);
        }
        String status = str(o, "status");
        if ("Success".equals(status)) {
            return 0;
        }
        if ("NonZeroExitCode".equals(str(o, "reason")) && o.has("details")) {
            JsonElement causes = o.getAsJsonObject("details").get("causes");
            if (causes instanceof JsonArray arr) {
                for (JsonElement c : arr) {
                    JsonObject co = c.getAsJsonObject();
                    if ("ExitCode".equals(str(co, "reason"))) {
                        try {
                            return Integer.parseInt(str(co, "message"));
                        } catch (NumberFormatException e) {
                            throw new StreamingException(
                                    "error stream protocol error: invalid exit code value "
                                            + str(co, "message"),
                                    0);
                        }
                    }
                }
            }
        }
        String msg = str(o, "message");
        throw new StreamingException(
                msg == null ? "error executing remote command: " + body : msg, 0);
    }

    private static String str(JsonObject o, String k) {
        JsonElement e = o.get(k);
        return e == null || e.isJsonNull() ? null : e.getAsString();
    }
}

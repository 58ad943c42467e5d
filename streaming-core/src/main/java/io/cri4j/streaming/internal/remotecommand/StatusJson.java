package io.cri4j.streaming.internal.remotecommand;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;

/**
 * The remotecommand result as upstream writes it on the error stream: for protocol v4 and later a
 * {@code metav1.Status} in JSON (reason {@code NonZeroExitCode} with an {@code ExitCode} cause
 * carrying the code); for v1-v3 only failures, as plain text (the status message).
 */
public record StatusJson(
        boolean ok, String reason, String message, Integer exitCode, int httpCode) {
    /** {@code metav1.StatusReason} for a non-zero exit ({@code remotecommand.NonZeroExitCodeReason}). */
    public static final String NON_ZERO_EXIT_CODE = "NonZeroExitCode";

    /** {@code remotecommand.ExitCodeCauseType}. */
    public static final String EXIT_CODE_CAUSE = "ExitCode";

    public static StatusJson success() {
        return new StatusJson(true, null, null, null, 0);
    }

    public static StatusJson exitCode(int code) {
        return new StatusJson(
                false,
                NON_ZERO_EXIT_CODE,
                "command terminated with non-zero exit code: exit status " + code,
                code,
                0);
    }

    public static StatusJson internalError(String what) {
        return new StatusJson(false, "InternalError", what, null, 500);
    }

    /** The v4+ JSON form. */
    public String toJson() {
        JsonObject o = new JsonObject();
        o.add("metadata", new JsonObject());
        o.addProperty("status", ok ? "Success" : "Failure");
        if (ok) {
            return o.toString();
        }
        if (exitCode != null) {
            o.addProperty("message", message);
            o.addProperty("reason", reason);
            JsonObject details = new JsonObject();
            JsonArray causes = new JsonArray();
            JsonObject cause = new JsonObject();
            cause.addProperty(
                    "reason", EXIT_CODE_CAUSE); // Go: StatusCause.Type has json tag "reason"
            cause.addProperty("message", Integer.toString(exitCode));
            causes.add(cause);
            details.add("causes", causes);
            o.add("details", details);
        } else {
            o.addProperty("message", "Internal error occurred: " + message);
            o.addProperty("reason", reason);
            JsonObject details = new JsonObject();
            JsonArray causes = new JsonArray();
            JsonObject cause = new JsonObject();
            cause.addProperty("message", message);
            causes.add(cause);
            details.add("causes", causes);
            o.add("details", details);
            o.addProperty("code", httpCode);
        }
        return o.toString();
    }

    /** The v1-v3 text form: empty for success, else the status message. */
    public String toText() {
        if (ok) {
            return "";
        }
        return exitCode != null ? message : "Internal error occurred: " + message;
    }
}

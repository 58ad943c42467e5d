package io.cri4j.hook.koordinator;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookPolicy;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One hook config file ({@code *.json} in the hook config directory), Koordinator's format plus
 * cri4j's optional {@code index} and {@code timeout}:
 * <pre>{@code
 * {"remote-endpoint": "/var/run/koordlet/koordlet.sock", "failure-policy": "Ignore",
 *  "runtime-hooks": ["PreRunPodSandbox", "PreCreateContainer"], "index": 10, "timeout": "2s"}
 * }</pre>
 *
 * @param name the file name without {@code .json}; names the hook in logs and errors
 * @param remoteEndpoint the hook server's unix socket ({@code unix:///path} or {@code /path})
 * @param failurePolicy Fail or Ignore (default Ignore)
 * @param points the hook points ({@code runtime-hooks})
 * @param index the hook's place in the order of all hooks (NRI's plugin index: 0..99, lower
 *     first, ties by name; default 0)
 * @param timeout per-call timeout (default 2 s; a number and a unit, {@code ms}, {@code s},
 *     {@code m} or {@code h}, such as {@code 500ms}); positive, at most
 *     {@link HookPolicy#MAX_TIMEOUT}
 */
public record HookConfig(
        String name,
        String remoteEndpoint,
        FailurePolicy failurePolicy,
        Set<HookPoint> points,
        int index,
        Duration timeout) {

    /** The default per-call timeout. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

    /** The longest unix socket path ({@code sun_path} holds 108 bytes with the final NUL). */
    static final int MAX_SOCKET_PATH_BYTES = 107;

    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h)");

    /** Validates and copies. */
    public HookConfig {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(remoteEndpoint, "remoteEndpoint");
        Objects.requireNonNull(failurePolicy, "failurePolicy");
        points = Set.copyOf(points);
        Objects.requireNonNull(timeout, "timeout");
        if (index < 0 || index > 99) {
            throw new IllegalArgumentException(
                    "hook " + name + ": index must be 0..99, got " + index);
        }
        if (timeout.isNegative()
                || timeout.isZero()
                || timeout.compareTo(HookPolicy.MAX_TIMEOUT) > 0) {
            throw new IllegalArgumentException(
                    "hook " + name + ": timeout must be > 0 and at most 1h," + " got " + timeout);
        }
    }

    /**
     * Parses a config file's text.
     *
     * @throws IllegalArgumentException naming the problem (bad JSON, missing or wrong field)
     */
    public static HookConfig parse(String name, String json) {
        JsonObject o;
        try {
            JsonElement e = JsonParser.parseString(json);
            if (!e.isJsonObject()) {
                throw new IllegalArgumentException("not a JSON object");
            }
            o = e.getAsJsonObject();
        } catch (JsonParseException | IllegalStateException | StackOverflowError e) {
            throw new IllegalArgumentException("malformed JSON: " + jsonProblem(e));
        }
        String endpoint = string(o, "remote-endpoint");
        if (endpoint == null || endpoint.isBlank()) {
            throw new IllegalArgumentException("\"remote-endpoint\" is missing or empty");
        }
        if (endpoint.startsWith("unix://")) {
            endpoint = endpoint.substring("unix://".length());
        }
        if (!endpoint.startsWith("/")) {
            throw new IllegalArgumentException(
                    "\"remote-endpoint\" must be an absolute unix socket path, got \""
                            + shorten(endpoint)
                            + "\"");
        }
        if (endpoint.getBytes(java.nio.charset.StandardCharsets.UTF_8).length
                        > MAX_SOCKET_PATH_BYTES
                || endpoint.indexOf('\0') >= 0) {
            throw new IllegalArgumentException(
                    "\"remote-endpoint\" must be a unix socket path of at most "
                            + MAX_SOCKET_PATH_BYTES
                            + " bytes without NUL, got \""
                            + shorten(endpoint)
                            + "\"");
        }
        FailurePolicy policy = FailurePolicy.parse(string(o, "failure-policy"));
        Set<HookPoint> points = EnumSet.noneOf(HookPoint.class);
        JsonElement hooks = o.get("runtime-hooks");
        if (hooks == null || !hooks.isJsonArray() || hooks.getAsJsonArray().isEmpty()) {
            throw new IllegalArgumentException("\"runtime-hooks\" must be a non-empty array");
        }
        for (JsonElement h : (JsonArray) hooks) {
            String p = shorten(h.isJsonPrimitive() ? h.getAsString() : String.valueOf(h));
            points.add(
                    HookPoint.fromConfigName(p)
                            .orElseThrow(
                                    () ->
                                            new IllegalArgumentException(
                                                    "unknown runtime hook \"" + p + "\"")));
        }
        int index = 0;
        if (o.has("index")) {
            index = index(o.get("index"));
        }
        Duration timeout = DEFAULT_TIMEOUT;
        String t = string(o, "timeout");
        if (t != null) {
            timeout = timeout(t);
        }
        return new HookConfig(name, endpoint, policy, points, index, timeout);
    }

    /** An integer from 0 to 99, exactly (no rounding, no wrap-around). */
    private static int index(JsonElement e) {
        try {
            if (e.isJsonPrimitive() && !e.getAsJsonPrimitive().isBoolean()) {
                int i = new java.math.BigDecimal(e.getAsString().strip()).intValueExact();
                if (i >= 0 && i <= 99) {
                    return i;
                }
            }
        } catch (NumberFormatException | ArithmeticException ignored) {
            // reported below
        }
        throw new IllegalArgumentException(
                "\"index\" must be an integer from 0 to 99 (NRI's plugin"
                        + " index), got "
                        + shorten(String.valueOf(e)));
    }

    /** A positive duration of at most {@link HookPolicy#MAX_TIMEOUT}, without overflow. */
    private static Duration timeout(String t) {
        Matcher m = DURATION.matcher(t);
        if (m.matches() && m.group(1).length() <= 10) {
            long v = Long.parseLong(m.group(1));
            long millis =
                    switch (m.group(2)) {
                        case "ms" -> v;
                        case "s" -> v * 1000;
                        case "m" -> v * 60_000;
                        default -> v * 3_600_000;
                    };
            if (millis > 0 && millis <= HookPolicy.MAX_TIMEOUT.toMillis()) {
                return Duration.ofMillis(millis);
            }
        }
        throw new IllegalArgumentException(
                "\"timeout\" must be a positive duration of at most 1h like"
                        + " \"500ms\", \"2s\" or \"1m\", got \""
                        + shorten(t)
                        + "\"");
    }

    /** Gson's problem in a line: no troubleshooting link, no endless path. */
    private static String jsonProblem(Throwable e) {
        if (e instanceof StackOverflowError) {
            return "nested too deeply";
        }
        Throwable c = e;
        while (c.getCause() != null && c.getCause() != c) {
            c = c.getCause();
        }
        String m = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
        int nl = m.indexOf('\n');
        if (nl >= 0) {
            m = m.substring(0, nl); // Gson adds "See https://github.com/google/gson/..."
        }
        int path = m.indexOf(" path $");
        if (path >= 0 && m.length() - path > 40) {
            m = m.substring(0, path);
        }
        return shorten(m);
    }

    /** A value quoted in an error, cut to a length that fits a log line. */
    private static String shorten(String s) {
        return s.length() <= 120 ? s : s.substring(0, 120) + "...";
    }

    private static String string(JsonObject o, String key) {
        JsonElement e = o.get(key);
        if (e == null || e.isJsonNull()) {
            return null;
        }
        if (!e.isJsonPrimitive()) {
            throw new IllegalArgumentException("\"" + key + "\" must be a string");
        }
        return e.getAsString();
    }
}

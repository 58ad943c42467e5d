package io.cri4j.hook;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
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
 * @param index call order among hooks of a point (default 0)
 * @param timeout per-call timeout (default 2 s; Go duration syntax such as {@code 500ms})
 */
public record HookConfig(String name, String remoteEndpoint, FailurePolicy failurePolicy,
    Set<HookPoint> points, int index, Duration timeout) {

  /** The default per-call timeout. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

  private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m)");

  /** Validates and copies. */
  public HookConfig {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(remoteEndpoint, "remoteEndpoint");
    Objects.requireNonNull(failurePolicy, "failurePolicy");
    points = Set.copyOf(points);
    Objects.requireNonNull(timeout, "timeout");
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
    } catch (JsonParseException e) {
      throw new IllegalArgumentException("malformed JSON: " + e.getMessage(), e);
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
          "\"remote-endpoint\" must be an absolute unix socket path, got \"" + endpoint + "\"");
    }
    FailurePolicy policy = FailurePolicy.parse(string(o, "failure-policy"));
    Set<HookPoint> points = EnumSet.noneOf(HookPoint.class);
    JsonElement hooks = o.get("runtime-hooks");
    if (hooks == null || !hooks.isJsonArray() || hooks.getAsJsonArray().isEmpty()) {
      throw new IllegalArgumentException("\"runtime-hooks\" must be a non-empty array");
    }
    for (JsonElement h : (JsonArray) hooks) {
      String p = h.isJsonPrimitive() ? h.getAsString() : String.valueOf(h);
      points.add(HookPoint.fromConfigName(p).orElseThrow(() ->
          new IllegalArgumentException("unknown runtime hook \"" + p + "\"")));
    }
    int index = 0;
    if (o.has("index")) {
      try {
        index = o.get("index").getAsInt();
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("\"index\" must be an integer");
      }
    }
    Duration timeout = DEFAULT_TIMEOUT;
    String t = string(o, "timeout");
    if (t != null) {
      Matcher m = DURATION.matcher(t);
      if (!m.matches() || Long.parseLong(m.group(1)) == 0) {
        throw new IllegalArgumentException(
            "\"timeout\" must be a positive duration like \"500ms\", \"2s\" or \"1m\", got \"" + t
                + "\"");
      }
      long v = Long.parseLong(m.group(1));
      timeout = switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(v);
        case "s" -> Duration.ofSeconds(v);
        default -> Duration.ofMinutes(v);
      };
    }
    return new HookConfig(name, endpoint, policy, points, index, timeout);
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

package io.cri4j.imagepull.internal;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;

/** Reads OCI / Docker v2 manifests and indexes (manifest lists). */
public final class Manifests {

    private Manifests() {}

    /** @return the Go architecture name of this JVM's platform */
    public static String goArch() {
        String a = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        return switch (a) {
            case "x86_64", "amd64" -> "amd64";
            case "aarch64", "arm64" -> "arm64";
            case "ppc64le" -> "ppc64le";
            case "s390x" -> "s390x";
            case "arm" -> "arm";
            default -> a;
        };
    }

    /**
     * @param json an index or manifest list
     * @return the digest of the linux manifest for this platform, or null when {@code json} is not an index
     */
    public static String pickFromIndex(byte[] json) {
        JsonObject o =
                JsonParser.parseString(new String(json, StandardCharsets.UTF_8)).getAsJsonObject();
        if (!o.has("manifests")) {
            return null;
        }
        JsonArray ms = o.getAsJsonArray("manifests");
        String first = null;
        for (JsonElement e : ms) {
            JsonObject m = e.getAsJsonObject();
            String digest = m.get("digest").getAsString();
            if (first == null) {
                first = digest;
            }
            if (m.has("platform")) {
                JsonObject p = m.getAsJsonObject("platform");
                if ("linux".equals(str(p, "os")) && goArch().equals(str(p, "architecture"))) {
                    return digest;
                }
            }
        }
        if (first == null) {
            throw new IllegalArgumentException("index lists no manifests");
        }
        return first;
    }

    /**
     * @param json an image manifest
     * @return layer short id to size, in manifest order
     */
    public static LinkedHashMap<String, Long> layers(byte[] json) {
        JsonObject o =
                JsonParser.parseString(new String(json, StandardCharsets.UTF_8)).getAsJsonObject();
        LinkedHashMap<String, Long> out = new LinkedHashMap<>();
        if (!o.has("layers")) {
            throw new IllegalArgumentException("manifest has no layers");
        }
        for (JsonElement e : o.getAsJsonArray("layers")) {
            JsonObject l = e.getAsJsonObject();
            out.putIfAbsent(
                    ContentProgressPoller.shortId(l.get("digest").getAsString()),
                    l.get("size").getAsLong());
        }
        return out;
    }

    /**
     * @param json an image manifest (an index yields no layers)
     * @return layer digest to size, in manifest order
     */
    public static LinkedHashMap<String, Long> layersByDigest(byte[] json) {
        JsonObject o =
                JsonParser.parseString(new String(json, StandardCharsets.UTF_8)).getAsJsonObject();
        LinkedHashMap<String, Long> out = new LinkedHashMap<>();
        if (o.has("layers")) {
            for (JsonElement e : o.getAsJsonArray("layers")) {
                JsonObject l = e.getAsJsonObject();
                out.putIfAbsent(l.get("digest").getAsString(), l.get("size").getAsLong());
            }
        }
        return out;
    }

    private static String str(JsonObject o, String k) {
        return o.has(k) ? o.get(k).getAsString() : "";
    }
}

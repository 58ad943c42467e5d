package io.cri4j.imagepull;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Pull progress as KEP-5334's JSON progress objects, as {@link PullProgressServer} serves them: {@code name} (the image for the whole image, the
 * layer's digest for a layer, as the KEP has it), {@code image}, {@code layer} (layer objects only),
 * {@code progress} and {@code total} in bytes ({@code total} -1 while unknown), {@code error} (only when the
 * pull failed); plus cri4j's {@code percent} (monotonic, 100 only on success, -1 unknown), {@code phase}
 * ({@code pulling}, {@code succeeded}, {@code failed}), {@code status} of a layer and {@code message}.
 */
public final class PullProgressJson {

    private PullProgressJson() {}

    /**
     * @param p a snapshot
     * @return the pull's object (image figures), one line of JSON without a newline
     */
    public static String imageLine(PullProgress p) {
        return image(p).toString();
    }

    private static JsonObject image(PullProgress p) {
        JsonObject o = new JsonObject();
        o.addProperty("name", p.image());
        o.addProperty("image", p.image());
        o.addProperty("progress", p.bytesDone());
        o.addProperty("total", p.percentKnown() ? p.bytesTotal() : -1);
        boolean failed =
                p.phase() == PullProgress.Phase.FAILED || p.phase() == PullProgress.Phase.CANCELLED;
        if (failed) {
            o.addProperty("error", p.message().isEmpty() ? "the pull failed" : p.message());
        }
        o.addProperty("percent", p.percent());
        o.addProperty("phase", phase(p));
        if (!failed && !p.message().isEmpty()) {
            o.addProperty("message", p.message());
        }
        return o;
    }

    private static JsonObject layer(String image, LayerProgress l) {
        JsonObject o = new JsonObject();
        o.addProperty("name", l.id());
        o.addProperty("image", image);
        o.addProperty("layer", l.id());
        o.addProperty("progress", l.done());
        o.addProperty("total", l.total());
        o.addProperty("status", l.status());
        return o;
    }

    private static JsonObject withLayers(PullProgress p) {
        JsonObject o = image(p);
        JsonArray layers = new JsonArray();
        p.layers().forEach(l -> layers.add(layer(p.image(), l)));
        o.add("layers", layers);
        return o;
    }

    /**
     * @param pulls snapshots
     * @return {@code {"pulls":[...]}}: every pull's object with its layers' objects in {@code layers}
     */
    public static String list(List<PullProgress> pulls) {
        JsonObject o = new JsonObject();
        JsonArray a = new JsonArray();
        pulls.forEach(p -> a.add(withLayers(p)));
        o.add("pulls", a);
        return o.toString();
    }

    private static String phase(PullProgress p) {
        return switch (p.phase()) {
            case SUCCEEDED -> "succeeded";
            case FAILED, CANCELLED -> "failed";
            default -> "pulling";
        };
    }

    /**
     * The lines of a stream: each snapshot becomes a line per layer that changed since the last snapshot
     * of the pull, then the pull's line. One per stream; not thread-safe.
     */
    public static final class Lines {
        private final Map<String, String> lastImage = new HashMap<>();
        private final Map<String, Map<String, String>> lastLayers = new HashMap<>();

        /** A new stream: its first snapshot of a pull gives a line for every layer. */
        public Lines() {}

        /**
         * @param p the next snapshot
         * @return newline-terminated JSON lines; empty when nothing changed
         */
        public String lines(PullProgress p) {
            StringBuilder sb = new StringBuilder();
            Map<String, String> layers =
                    lastLayers.computeIfAbsent(p.image(), k -> new HashMap<>());
            for (LayerProgress l : p.layers()) {
                String line = layer(p.image(), l).toString();
                if (!line.equals(layers.put(l.id(), line))) {
                    sb.append(line).append('\n');
                }
            }
            String image = image(p).toString();
            if (!image.equals(lastImage.put(p.image(), image))) {
                sb.append(image).append('\n');
            }
            if (p.phase().terminal()) {
                lastImage.remove(p.image()); // a later pull of the image starts afresh
                lastLayers.remove(p.image());
            }
            return sb.toString();
        }
    }
}

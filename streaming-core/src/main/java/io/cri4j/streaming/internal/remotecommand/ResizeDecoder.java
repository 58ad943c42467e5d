package io.cri4j.streaming.internal.remotecommand;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.streaming.TerminalSize;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * Splits a byte stream of concatenated JSON objects ({@code {"Width":80,"Height":24}}, as Go's
 * json.Encoder writes them) into terminal sizes, across arbitrary chunk boundaries. Like upstream
 * (json.Decoder), the first undecodable object ends the stream.
 */
public final class ResizeDecoder {
    private static final int MAX_OBJECT = 4096;
    private final Consumer<TerminalSize> sink;
    private final Runnable onEnd;
    private final ByteArrayOutputStream current = new ByteArrayOutputStream();
    private int depth;
    private boolean inString;
    private boolean escape;
    private boolean ended;

    /**
     * What a client sends for a size: one object and a newline, as Go's json.Encoder writes
     * upstream's {@code TerminalSize} (the form this decoder reads).
     */
    public static byte[] message(TerminalSize size) {
        return ("{\"Width\":" + size.width() + ",\"Height\":" + size.height() + "}\n")
                .getBytes(StandardCharsets.UTF_8);
    }

    public ResizeDecoder(Consumer<TerminalSize> sink, Runnable onEnd) {
        this.sink = sink;
        this.onEnd = onEnd;
    }

    public void feed(byte[] data) {
        for (byte b : data) {
            if (ended) {
                return;
            }
            char c = (char) (b & 0xFF);
            if (depth == 0) {
                if (c == '{') {
                    depth = 1;
                    current.reset();
                    current.write(b);
                } else if (!Character.isWhitespace(c)) {
                    end();
                }
                continue;
            }
            current.write(b);
            if (current.size() > MAX_OBJECT) {
                end();
                continue;
            }
            if (inString) {
                if (escape) {
                    escape = false;
                } else if (c == '\\') {
                    escape = true;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{') {
                depth++;
            } else if (c == '}') {
                depth--;
                if (depth == 0) {
                    emit(current.toString(StandardCharsets.UTF_8));
                }
            }
        }
    }

    private void emit(String json) {
        try {
            JsonElement e = JsonParser.parseString(json);
            JsonObject o = e.getAsJsonObject();
            int w = o.has("Width") ? o.get("Width").getAsInt() : 0;
            int h = o.has("Height") ? o.get("Height").getAsInt() : 0;
            sink.accept(new TerminalSize(w, h));
        } catch (RuntimeException ex) {
            end();
        }
    }

    /** Ends the stream (peer closed it, or bad input). */
    public void end() {
        if (!ended) {
            ended = true;
            onEnd.run();
        }
    }
}

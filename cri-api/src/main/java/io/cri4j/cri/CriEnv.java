package io.cri4j.cri;

import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.KeyValue;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Environment variables of CRI {@code runtime.v1} as strings. The value of {@link KeyValue} is
 * {@code bytes} on the wire (an environment value need not be UTF-8), so its builder takes a
 * {@link ByteString}: {@code KeyValue.newBuilder().setValue("1")} does not compile. These helpers
 * write and read UTF-8 values.
 *
 * <pre>{@code
 * ContainerConfig.newBuilder().addEnvs(CriEnv.of("TEAM", "platform"));
 * Map<String, String> env = CriEnv.asMap(config);
 * }</pre>
 */
public final class CriEnv {
    private CriEnv() {}

    /**
     * One variable with a UTF-8 value.
     *
     * @param key the variable's name
     * @param value its value
     * @return the CRI message
     */
    public static KeyValue of(String key, String value) {
        return KeyValue.newBuilder().setKey(key).setValue(ByteString.copyFromUtf8(value)).build();
    }

    /**
     * The value of a variable read as UTF-8 (bytes that are not UTF-8 become U+FFFD).
     *
     * @param kv the variable
     * @return its value
     */
    public static String value(KeyValue kv) {
        return kv.getValue().toString(StandardCharsets.UTF_8);
    }

    /**
     * The variables of a container config, in their order, values read as UTF-8; a name given twice
     * keeps its last value, as the runtime applies them.
     *
     * @param config the container's config
     * @return name to value
     */
    public static Map<String, String> asMap(ContainerConfig config) {
        Map<String, String> env = new LinkedHashMap<>();
        for (KeyValue kv : config.getEnvsList()) {
            env.put(kv.getKey(), value(kv));
        }
        return env;
    }
}

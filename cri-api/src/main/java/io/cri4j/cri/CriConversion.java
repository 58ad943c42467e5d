package io.cri4j.cri;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import java.lang.reflect.InvocationTargetException;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Converts CRI messages between {@code runtime.v1} and {@code runtime.v1alpha2}.
 *
 * <p>The two versions share their wire format for every field they have in common (same names,
 * numbers and types), so a message converts by re-parsing its bytes as its counterpart, the
 * type with the same name in the other version's Java package. Fields that only the source
 * version has are kept as unknown fields of the result, so a round trip
 * {@code v1 → v1alpha2 → v1} gives back an equal message.
 *
 * <pre>{@code
 * io.cri4j.cri.v1alpha2.VersionRequest old = CriConversion.convert(v1Request,
 *         io.cri4j.cri.v1alpha2.VersionRequest.class);
 * }</pre>
 */
public final class CriConversion {

    private static final String V1 = "io.cri4j.cri.v1.";
    private static final String V1ALPHA2 = "io.cri4j.cri.v1alpha2.";
    private static final ConcurrentHashMap<Class<?>, Optional<Message>> COUNTERPARTS =
            new ConcurrentHashMap<>();

    private CriConversion() {}

    /**
     * Converts a message to the given type of the other version.
     *
     * @param source a message of either version
     * @param target the type to produce
     * @param <T> the target type
     * @return the converted message
     * @throws IllegalArgumentException when the bytes do not parse as the target type
     */
    public static <T extends Message> T convert(Message source, Class<T> target) {
        Objects.requireNonNull(source, "source");
        Message prototype = defaultInstance(target);
        try {
            return target.cast(prototype.getParserForType().parseFrom(source.toByteString()));
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException(
                    "cannot convert "
                            + source.getDescriptorForType().getFullName()
                            + " to "
                            + prototype.getDescriptorForType().getFullName()
                            + ": "
                            + e.getMessage(),
                    e);
        }
    }

    /**
     * Converts a message to its counterpart in the other version.
     *
     * @param source a message of {@code runtime.v1} or {@code runtime.v1alpha2}
     * @return the counterpart message
     * @throws IllegalArgumentException when the type has no counterpart
     */
    public static Message toOtherVersion(Message source) {
        Message prototype =
                counterpart(source.getClass())
                        .orElseThrow(
                                () ->
                                        new IllegalArgumentException(
                                                source.getDescriptorForType().getFullName()
                                                        + " has no counterpart in the other CRI version"));
        return convert(source, prototype.getClass());
    }

    /**
     * @param type a generated message class of either version
     * @return the default instance of the same-named type in the other version, if there is one
     */
    public static Optional<Message> counterpart(Class<?> type) {
        return COUNTERPARTS.computeIfAbsent(type, CriConversion::findCounterpart);
    }

    private static Optional<Message> findCounterpart(Class<?> type) {
        String name = type.getName();
        String other;
        if (name.startsWith(V1)) {
            other = V1ALPHA2 + name.substring(V1.length());
        } else if (name.startsWith(V1ALPHA2)) {
            other = V1 + name.substring(V1ALPHA2.length());
        } else {
            return Optional.empty();
        }
        try {
            Class<?> cls = Class.forName(other, true, type.getClassLoader());
            if (!Message.class.isAssignableFrom(cls)) {
                return Optional.empty();
            }
            return Optional.of(defaultInstance(cls.asSubclass(Message.class)));
        } catch (ClassNotFoundException e) {
            return Optional.empty();
        }
    }

    private static Message defaultInstance(Class<? extends Message> type) {
        try {
            return (Message) type.getMethod("getDefaultInstance").invoke(null);
        } catch (NoSuchMethodException | IllegalAccessException | InvocationTargetException e) {
            throw new IllegalArgumentException(
                    type.getName() + " is not a generated protobuf message", e);
        }
    }
}

package io.cri4j.hook.internal;

import io.grpc.MethodDescriptor;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.HashSet;
import java.util.Set;

/** What the {@code Forwarding*} interceptors need to dispatch CRI methods to typed methods. */
public final class CriMethods {
    private static final Set<String> SERVICES =
            Set.of(
                    "runtime.v1.RuntimeService",
                    "runtime.v1.ImageService",
                    "runtime.v1alpha2.RuntimeService",
                    "runtime.v1alpha2.ImageService");

    private CriMethods() {}

    /** Whether {@code method} is of CRI's RuntimeService or ImageService (v1 or v1alpha2). */
    public static boolean isCri(MethodDescriptor<?, ?> method) {
        return SERVICES.contains(method.getServiceName());
    }

    /**
     * The bare RPC names (e.g. {@code CreateContainer}) whose typed method (e.g.
     * {@code createContainer}), declared public in {@code base}, {@code type} overrides.
     */
    public static Set<String> overridden(Class<?> type, Class<?> base) {
        Set<String> out = new HashSet<>();
        for (Method m : base.getDeclaredMethods()) {
            if (!Modifier.isPublic(m.getModifiers())
                    || Modifier.isFinal(m.getModifiers())
                    || m.getParameterCount() != 2
                    || !com.google.protobuf.Message.class.isAssignableFrom(
                            m.getParameterTypes()[0])) {
                continue;
            }
            try {
                if (type.getMethod(m.getName(), m.getParameterTypes()).getDeclaringClass()
                        != base) {
                    out.add(
                            Character.toUpperCase(m.getName().charAt(0))
                                    + m.getName().substring(1));
                }
            } catch (NoSuchMethodException e) {
                throw new IllegalStateException("no public " + m.getName() + " in " + type, e);
            }
        }
        return Set.copyOf(out);
    }
}

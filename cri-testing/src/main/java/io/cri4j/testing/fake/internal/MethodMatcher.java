package io.cri4j.testing.fake.internal;

import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Matches full gRPC method names against what a test writes: {@code RunPodSandbox} (either API version),
 * {@code RuntimeService/RunPodSandbox}, or the full {@code runtime.v1alpha2.RuntimeService/RunPodSandbox}.
 */
public record MethodMatcher(String spec, Predicate<String> predicate) {

    private static final Set<String> KNOWN = new TreeSet<>();

    static {
        for (ServiceDescriptor d :
                new ServiceDescriptor[] {
                    io.cri4j.cri.v1.RuntimeServiceGrpc.getServiceDescriptor(),
                    io.cri4j.cri.v1.ImageServiceGrpc.getServiceDescriptor(),
                    io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.getServiceDescriptor(),
                    io.cri4j.cri.v1alpha2.ImageServiceGrpc.getServiceDescriptor()
                }) {
            for (MethodDescriptor<?, ?> m : d.getMethods()) {
                KNOWN.add(m.getFullMethodName());
            }
        }
    }

    /**
     * Parses a method spec.
     *
     * @throws IllegalArgumentException when no CRI method has that name (catches typos in tests)
     */
    public static MethodMatcher of(String spec) {
        if (spec == null || spec.isBlank()) {
            throw new IllegalArgumentException("method name is empty");
        }
        Predicate<String> p;
        if (spec.contains(".")) {
            p = full -> full.equals(spec);
        } else if (spec.contains("/")) {
            p = full -> full.substring(full.lastIndexOf('.') + 1).equals(spec);
        } else {
            p = full -> full.substring(full.indexOf('/') + 1).equals(spec);
        }
        if (KNOWN.stream().noneMatch(p)) {
            throw new IllegalArgumentException(
                    "no CRI method matches '"
                            + spec
                            + "' (write e.g. RunPodSandbox, "
                            + "ImageService/PullImage or runtime.v1alpha2.RuntimeService/Version)");
        }
        return new MethodMatcher(spec, p);
    }

    /** Whether the full method name matches. */
    public boolean matches(String fullMethodName) {
        return predicate.test(fullMethodName);
    }

    @Override
    public String toString() {
        return spec;
    }
}

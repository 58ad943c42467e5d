package io.cri4j.testing.fake.internal;

import io.grpc.Context;

/** Which CRI API version the current call came in on; the v1alpha2 bridge sets it. */
public final class ApiVersion {

    static final Context.Key<String> KEY = Context.keyWithDefault("cri4j-fake-api-version", "v1");

    private ApiVersion() {}

    /** {@code "v1"} or {@code "v1alpha2"}. */
    public static String current() {
        return KEY.get();
    }
}

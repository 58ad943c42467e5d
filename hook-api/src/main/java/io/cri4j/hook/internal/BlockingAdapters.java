package io.cri4j.hook.internal;

import io.cri4j.hook.cri.AsyncCriInterceptor;
import io.cri4j.hook.cri.CriInterceptor;

/**
 * Recognises the adapters {@link CriInterceptor#async} makes of blocking interceptors, whose calls
 * run on a worker (the proxy gives those calls a gRPC context with the client's deadline). The
 * adapter class is the interceptor SPI's own, not API; it is found here through the SPI itself.
 */
public final class BlockingAdapters {
    private static final Class<?> ADAPTER =
            CriInterceptor.async(new CriInterceptor() {}, Runnable::run).getClass();

    private BlockingAdapters() {}

    /** True if {@code interceptor} is a blocking interceptor adapted by {@link CriInterceptor#async}. */
    public static boolean isBlocking(AsyncCriInterceptor interceptor) {
        return interceptor.getClass() == ADAPTER;
    }
}

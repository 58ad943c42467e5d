package io.cri4j.imagepull.internal;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import java.util.concurrent.CompletableFuture;

/** Bridges gRPC's listenable futures to completable ones, cancellation included. */
public final class Futures2 {

    private Futures2() {}

    /**
     * @param lf a listenable future (a gRPC call)
     * @param <T> result type
     * @return a completable future; cancelling it cancels the call
     */
    public static <T> CompletableFuture<T> toCompletable(ListenableFuture<T> lf) {
        CompletableFuture<T> cf = new CompletableFuture<>();
        Futures.addCallback(
                lf,
                new FutureCallback<T>() {
                    @Override
                    public void onSuccess(T result) {
                        cf.complete(result);
                    }

                    @Override
                    public void onFailure(Throwable t) {
                        cf.completeExceptionally(t);
                    }
                },
                MoreExecutors.directExecutor());
        cf.whenComplete(
                (r, e) -> {
                    if (cf.isCancelled()) {
                        lf.cancel(true);
                    }
                });
        return cf;
    }
}

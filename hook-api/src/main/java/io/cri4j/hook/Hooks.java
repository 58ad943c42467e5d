package io.cri4j.hook;

import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;

/** Finding hooks, and adapting a blocking {@link Hook} to the {@link AsyncHook} form hosts run. */
public final class Hooks {
    private Hooks() {}

    /** The method of each event, by name (one per event in both interfaces). */
    private static final Map<HookEvent, String> METHODS = new EnumMap<>(HookEvent.class);

    static {
        for (HookEvent e : HookEvent.values()) {
            String n = e.displayName();
            METHODS.put(e, Character.toLowerCase(n.charAt(0)) + n.substring(1));
        }
    }

    /**
     * The simple name of {@code hook}'s class, or for an anonymous class or a lambda (which have
     * none) its binary name without the package, e.g. {@code MyTest$1}: the default of {@link
     * Hook#name()} and {@link AsyncHook#name()}.
     */
    public static String defaultName(Object hook) {
        Class<?> c = hook.getClass();
        String simple = c.getSimpleName();
        if (!simple.isEmpty()) {
            return simple;
        }
        String n = c.getName();
        return n.substring(n.lastIndexOf('.') + 1);
    }

    /**
     * The events whose methods {@code hook}'s class overrides ({@link Hook} or {@link AsyncHook}):
     * the default of {@link Hook#events()} and {@link AsyncHook#events()}.
     */
    public static Set<HookEvent> overriddenEvents(Object hook) {
        Class<?> api = hook instanceof AsyncHook ? AsyncHook.class : Hook.class;
        Set<HookEvent> out = EnumSet.noneOf(HookEvent.class);
        for (Method m : api.getMethods()) {
            for (Map.Entry<HookEvent, String> e : METHODS.entrySet()) {
                if (m.getName().equals(e.getValue()) && overrides(hook.getClass(), m, api)) {
                    out.add(e.getKey());
                }
            }
        }
        return Collections.unmodifiableSet(out);
    }

    private static boolean overrides(Class<?> type, Method m, Class<?> api) {
        try {
            return type.getMethod(m.getName(), m.getParameterTypes()).getDeclaringClass() != api;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    /**
     * Every {@link Hook} listed in {@code META-INF/services/io.cri4j.hook.Hook} on {@code loader}'s
     * class path, instantiated with its public no-argument constructor.
     */
    public static List<Hook> loadBlocking(ClassLoader loader) {
        List<Hook> out = new ArrayList<>();
        ServiceLoader.load(Hook.class, loader).forEach(out::add);
        return List.copyOf(out);
    }

    /** Every {@link AsyncHook} listed in {@code META-INF/services/io.cri4j.hook.AsyncHook}. */
    public static List<AsyncHook> loadAsync(ClassLoader loader) {
        List<AsyncHook> out = new ArrayList<>();
        ServiceLoader.load(AsyncHook.class, loader).forEach(out::add);
        return List.copyOf(out);
    }

    /**
     * {@code hook} as an {@link AsyncHook} whose every call runs on {@code worker}; cancelling a
     * returned stage (as a host does at the timeout) interrupts the worker thread running it.
     */
    public static AsyncHook async(Hook hook, Executor worker) {
        return new BlockingHookAdapter(
                Objects.requireNonNull(hook, "hook"), Objects.requireNonNull(worker, "worker"));
    }

    /** Runs a blocking hook's calls on a worker; see {@link #async}. */
    private static final class BlockingHookAdapter implements AsyncHook {
        private final Hook hook;
        private final Executor worker;

        BlockingHookAdapter(Hook hook, Executor worker) {
            this.hook = hook;
            this.worker = worker;
        }

        private <T> CompletionStage<T> run(Callable<T> call) {
            CompletableFuture<T> result = new CompletableFuture<>();
            FutureTask<Void> task =
                    new FutureTask<>(
                            () -> {
                                try {
                                    result.complete(call.call());
                                } catch (Throwable t) {
                                    result.completeExceptionally(t);
                                }
                                return null;
                            });
            result.whenComplete(
                    (v, t) -> {
                        if (result.isCancelled()) {
                            task.cancel(true);
                        }
                    });
            try {
                worker.execute(task);
            } catch (RejectedExecutionException e) {
                result.completeExceptionally(e);
            }
            return result;
        }

        private CompletionStage<Void> run(ThrowingRunnable call) {
            return run(
                    () -> {
                        call.run();
                        return null;
                    });
        }

        @Override
        public String name() {
            return hook.name();
        }

        @Override
        public HookPolicy policy() {
            return hook.policy();
        }

        @Override
        public Set<HookEvent> events() {
            return hook.events();
        }

        @Override
        public CompletionStage<Void> configure(HookConfiguration c) {
            return run(() -> hook.configure(c));
        }

        @Override
        public CompletionStage<List<ContainerUpdate>> synchronize(
                List<PodSandbox> pods, List<Container> containers) {
            return run(() -> hook.synchronize(pods, containers));
        }

        @Override
        public void shutdown() {
            worker.execute(hook::shutdown);
        }

        @Override
        public CompletionStage<PodSandboxAdjustment> adjustPodSandbox(PodSandbox pod) {
            return run(() -> hook.adjustPodSandbox(pod));
        }

        @Override
        public CompletionStage<Void> runPodSandbox(PodSandbox pod) {
            return run(() -> hook.runPodSandbox(pod));
        }

        @Override
        public CompletionStage<Void> updatePodSandbox(
                PodSandbox pod, LinuxResources overhead, LinuxResources resources) {
            return run(() -> hook.updatePodSandbox(pod, overhead, resources));
        }

        @Override
        public CompletionStage<Void> postUpdatePodSandbox(PodSandbox pod) {
            return run(() -> hook.postUpdatePodSandbox(pod));
        }

        @Override
        public CompletionStage<Void> stopPodSandbox(PodSandbox pod) {
            return run(() -> hook.stopPodSandbox(pod));
        }

        @Override
        public CompletionStage<Void> removePodSandbox(PodSandbox pod) {
            return run(() -> hook.removePodSandbox(pod));
        }

        @Override
        public CompletionStage<HookResult> createContainer(PodSandbox pod, Container c) {
            return run(() -> hook.createContainer(pod, c));
        }

        @Override
        public CompletionStage<Void> postCreateContainer(PodSandbox pod, Container c) {
            return run(() -> hook.postCreateContainer(pod, c));
        }

        @Override
        public CompletionStage<Void> startContainer(PodSandbox pod, Container c) {
            return run(() -> hook.startContainer(pod, c));
        }

        @Override
        public CompletionStage<Void> postStartContainer(PodSandbox pod, Container c) {
            return run(() -> hook.postStartContainer(pod, c));
        }

        @Override
        public CompletionStage<HookResult> updateContainer(
                PodSandbox pod, Container c, LinuxResources resources) {
            return run(() -> hook.updateContainer(pod, c, resources));
        }

        @Override
        public CompletionStage<Void> postUpdateContainer(PodSandbox pod, Container c) {
            return run(() -> hook.postUpdateContainer(pod, c));
        }

        @Override
        public CompletionStage<HookResult> stopContainer(PodSandbox pod, Container c) {
            return run(() -> hook.stopContainer(pod, c));
        }

        @Override
        public CompletionStage<Void> removeContainer(PodSandbox pod, Container c) {
            return run(() -> hook.removeContainer(pod, c));
        }

        @Override
        public CompletionStage<Void> validateContainerAdjustment(
                ValidateContainerAdjustmentRequest request) {
            return run(() -> hook.validateContainerAdjustment(request));
        }

        @Override
        public String toString() {
            return hook.name() + " (on a worker)";
        }
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }
}

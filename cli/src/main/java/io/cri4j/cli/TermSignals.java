package io.cri4j.cli;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;

/**
 * SIGTERM and SIGINT handled by the command itself rather than by starting the JVM's shutdown, so
 * that the command ends as its main thread says (exit 0 once the NRI plugin has unregistered), not
 * with 143 while shutdown hooks race the main thread. {@code sun.misc.Signal} (module {@code
 * jdk.unsupported}, kept accessible for this use by JEP 260) is reached reflectively: javac warns
 * at every direct use of an internal API, a warning no annotation suppresses, and main code is
 * compiled with warnings as errors.
 */
final class TermSignals {
    private TermSignals() {}

    /**
     * Runs {@code action} on a thread of its own at SIGTERM or SIGINT; without {@code
     * sun.misc.Signal}, from a shutdown hook.
     */
    static void onTermination(Runnable action) {
        Runnable async = () -> new Thread(action, "cri4j-termination").start();
        try {
            Class<?> signal = Class.forName("sun.misc.Signal");
            Class<?> handlerType = Class.forName("sun.misc.SignalHandler");
            Object handler =
                    Proxy.newProxyInstance(
                            handlerType.getClassLoader(),
                            new Class<?>[] {handlerType},
                            (self, method, args) ->
                                    switch (method.getName()) {
                                        case "handle" -> {
                                            async.run();
                                            yield null;
                                        }
                                        case "hashCode" -> System.identityHashCode(self);
                                        case "equals" -> self == args[0];
                                        default -> "cri4j termination handler";
                                    });
            Method handle = signal.getMethod("handle", signal, handlerType);
            Constructor<?> named = signal.getConstructor(String.class);
            for (String name : List.of("TERM", "INT")) {
                handle.invoke(null, named.newInstance(name), handler);
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            Runtime.getRuntime().addShutdownHook(new Thread(action, "cri4j-termination"));
        }
    }
}

package io.cri4j.examples.demo;

import io.cri4j.cli.EndpointConverter;
import io.cri4j.cri.CriEndpoint;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code cri4j demo}: the demo agent, on the embedded fake runtime or a real one. */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description =
                "Run the demo agent: fake runtime (or --runtime-endpoint), proxy with a hook, "
                        + "pre-warming, a pod, a live exec.")
final class DemoCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Option(
            names = {"-r", "--runtime-endpoint"},
            converter = EndpointConverter.class,
            description =
                    "a real CRI runtime to use instead of the embedded fake, e.g. unix:///run/containerd/containerd.sock")
    CriEndpoint runtime;

    @Option(
            names = "--image",
            description =
                    "image to pre-warm (repeat; the first runs the container). "
                            + "Default: "
                            + "docker.io/library/busybox:1.36 and registry.k8s.io/pause:3.9")
    List<String> images;

    @Option(
            names = "--timeout",
            defaultValue = "30",
            description = "seconds allowed per step (default: ${DEFAULT-VALUE})")
    long timeoutSeconds;

    @Override
    public Integer call() throws Exception {
        var out = spec.commandLine().getOut();
        new DemoAgent(
                        out,
                        Optional.ofNullable(runtime),
                        images == null || images.isEmpty() ? DemoAgent.DEFAULT_IMAGES : images,
                        Duration.ofSeconds(timeoutSeconds))
                .run();
        return 0;
    }
}

package io.cri4j.cli;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code --metrics-address} and its companions, shared by {@code proxy}, {@code nri-plugin} and
 * {@code fake-runtime}: a Prometheus registry the command's modules record into, served with health
 * and readiness endpoints on the hardened HTTP surface.
 */
final class MetricsOptions {

    InetSocketAddress address;
    boolean allowRemote;
    List<String> allowHosts = new ArrayList<>();

    /** Adds these options to a command's model, bound to this object's fields. */
    void addTo(CommandSpec s) {
        s.addOption(
                Specs.option(
                                "--metrics-address",
                                InetSocketAddress.class,
                                "address",
                                () -> address,
                                v -> address = v)
                        .converters(new AddressConverter())
                        .description(
                                "serve /metrics (Prometheus text, OpenMetrics when asked), /healthz and"
                                        + " /readyz here, e.g. 127.0.0.1:9464; loopback only unless"
                                        + " --metrics-allow-remote")
                        .build());
        s.addOption(
                Specs.option(
                                "--metrics-allow-remote",
                                boolean.class,
                                "allowRemote",
                                () -> allowRemote,
                                v -> allowRemote = v)
                        .description("allow --metrics-address on a non-loopback address")
                        .build());
        s.addOption(
                Specs.strings("--http-allow-host", "HOST", () -> allowHosts, v -> allowHosts = v)
                        .splitRegex(",")
                        .description(
                                "a Host header the HTTP endpoints (metrics, progress) accept besides"
                                        + " loopback names and addresses and the address they listen"
                                        + " on (repeatable; * for any)")
                        .build());
    }

    /** The registry, when metrics are asked for; null otherwise. */
    PrometheusMeterRegistry registry;

    /**
     * Checks the options and makes the registry (with the JVM's and the process's meters) when
     * {@code --metrics-address} is given.
     */
    PrometheusMeterRegistry registry(CommandLine cmd) {
        if (address == null) {
            return null;
        }
        if (!allowRemote && !address.getAddress().isLoopbackAddress()) {
            throw new CommandLine.ParameterException(
                    cmd,
                    "--metrics-address "
                            + address.getHostString()
                            + ":"
                            + address.getPort()
                            + " is not a loopback address; add --metrics-allow-remote to serve it there");
        }
        PrometheusMeterRegistry r = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        // two of Micrometer's process meters break Prometheus' naming rules (promtool's lint):
        // process_cpu_time_ns_total (an abbreviated unit; process_cpu_usage stays) and
        // system_cpu_count (a "_count" suffix on a gauge), renamed system_cpus
        r.config()
                .meterFilter(MeterFilter.deny(id -> id.getName().equals("process.cpu.time")))
                .meterFilter(
                        new MeterFilter() {
                            @Override
                            public Meter.Id map(Meter.Id id) {
                                return id.getName().equals("system.cpu.count")
                                        ? id.withName("system.cpus")
                                        : id;
                            }
                        });
        new ClassLoaderMetrics().bindTo(r);
        new JvmMemoryMetrics().bindTo(r);
        new JvmGcMetrics().bindTo(r);
        new JvmThreadMetrics().bindTo(r);
        new ProcessorMetrics().bindTo(r);
        new UptimeMetrics().bindTo(r);
        new FileDescriptorMetrics().bindTo(r);
        registry = r;
        return r;
    }

    /**
     * Serves the registry, when there is one.
     *
     * @param readiness null when ready, else why not
     * @return the server, or null without {@code --metrics-address}
     */
    MetricsServer serve(Supplier<String> readiness) throws IOException {
        if (registry == null) {
            return null;
        }
        return MetricsServer.start(address, allowRemote, allowHosts, registry, readiness);
    }
}

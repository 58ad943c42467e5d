package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an {@link NriHost} and an {@link NriPlugin} given a registry record of their connections, over
 * a real socket: registrations, plugins registered now, disconnections and refused connections.
 */
class NriMetricsIT {
    @TempDir Path dir;

    private final SimpleMeterRegistry hostMeters = new SimpleMeterRegistry();
    private final SimpleMeterRegistry pluginMeters = new SimpleMeterRegistry();

    private double host(String name) {
        return hostMeters.find(name).counter() != null
                ? hostMeters.find(name).counter().count()
                : hostMeters.find(name).gauge().value();
    }

    private double plugin(String name) {
        return pluginMeters.find(name).counter() != null
                ? pluginMeters.find(name).counter().count()
                : pluginMeters.find(name).gauge().value();
    }

    static void await(BooleanSupplier c) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!c.getAsBoolean() && System.nanoTime() < end) {
            Thread.sleep(10);
        }
    }

    @Test
    void hostAndPluginCountRegistrationsDisconnectionsAndRefusals() throws Exception {
        NriHost nri = NriHost.builder(dir.resolve("nri.sock")).meterRegistry(hostMeters).build();
        nri.start(new RecordingHost());
        try {
            try (RawNriPlugin raw = new RawNriPlugin(nri.socket())) {
                raw.write("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                assertThat(raw.closedByRuntime()).isTrue();
            }
            await(() -> host("cri4j.nri.host.rejections") == 1);
            assertThat(host("cri4j.nri.host.rejections")).isEqualTo(1);

            NriPlugin p =
                    NriPlugin.builder(
                                    new Hook() {
                                        @Override
                                        public String name() {
                                            return "metered";
                                        }

                                        @Override
                                        public HookResult createContainer(
                                                PodSandbox pod, Container c) {
                                            return HookResult.none();
                                        }
                                    })
                            .socket(nri.socket())
                            .index(10)
                            .meterRegistry(pluginMeters)
                            .build()
                            .start();
            try {
                await(() -> host("cri4j.nri.host.plugins") == 1);
                await(() -> host("cri4j.nri.host.registrations") == 1);
                assertThat(host("cri4j.nri.host.registrations")).isEqualTo(1);
                assertThat(host("cri4j.nri.host.plugins")).isEqualTo(1);
                assertThat(plugin("cri4j.nri.plugin.registrations")).isEqualTo(1);
                assertThat(plugin("cri4j.nri.plugin.registered")).isEqualTo(1);
                assertThat(
                                pluginMeters
                                        .find("cri4j.nri.plugin.registered")
                                        .tag("plugin", "10-metered")
                                        .gauge())
                        .isNotNull();
            } finally {
                p.close();
            }
            // the gauge follows the host's plugin list; the counter its listener, told just after
            await(() -> host("cri4j.nri.host.disconnections") == 1);
            await(() -> host("cri4j.nri.host.plugins") == 0);
            assertThat(host("cri4j.nri.host.disconnections")).isEqualTo(1);
            assertThat(host("cri4j.nri.host.plugins")).isZero();
        } finally {
            nri.close();
        }
    }

    @Test
    void aPluginThatLosesItsRuntimeCountsTheDisconnection() throws Exception {
        NriHost nri = NriHost.builder(dir.resolve("nri.sock")).build();
        nri.start(new RecordingHost());
        NriPlugin p =
                NriPlugin.builder(
                                new Hook() {
                                    @Override
                                    public String name() {
                                        return "loses";
                                    }

                                    @Override
                                    public HookResult createContainer(PodSandbox pod, Container c) {
                                        return HookResult.none();
                                    }
                                })
                        .socket(nri.socket())
                        .index(11)
                        .meterRegistry(pluginMeters)
                        .build()
                        .start();
        try {
            assertThat(plugin("cri4j.nri.plugin.registered")).isEqualTo(1);
            nri.close();
            await(() -> plugin("cri4j.nri.plugin.disconnections") == 1);
            assertThat(plugin("cri4j.nri.plugin.disconnections")).isEqualTo(1);
            assertThat(plugin("cri4j.nri.plugin.registered")).isZero();
        } finally {
            p.close();
        }
    }
}

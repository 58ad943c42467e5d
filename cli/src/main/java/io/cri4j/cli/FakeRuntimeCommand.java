package io.cri4j.cli;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.testing.fake.FakeCriServer;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/** {@code cri4j fake-runtime}: serves the in-memory fake CRI runtime until stopped (Ctrl-C, SIGTERM). */
final class FakeRuntimeCommand implements Callable<Integer> {

    CommandSpec spec;
    CriEndpoint listen;
    String streamingAddress;
    long pullRate;
    CriEndpoint nriSocket;
    FailurePolicy nriFailurePolicy;
    MetricsOptions metrics = new MetricsOptions();

    /** This command's picocli model, its options bound to the fields ({@link Specs}). */
    CommandSpec commandSpec() {
        CommandSpec s =
                Specs.command(
                        this,
                        "fake-runtime",
                        "Serve the in-memory fake CRI runtime (v1 and v1alpha2) for crictl or"
                                + " kubelet.");
        s.addOption(
                Specs.option("--listen", CriEndpoint.class, "listen", () -> listen, v -> listen = v)
                        .required(true)
                        .converters(new EndpointConverter())
                        .description("where to serve CRI, e.g. unix:///tmp/fake-cri.sock")
                        .build());
        s.addOption(
                Specs.option(
                                "--streaming-address",
                                String.class,
                                "streamingAddress",
                                () -> streamingAddress,
                                v -> streamingAddress = v)
                        .defaultValue("127.0.0.1:0")
                        .description(
                                "HOST:PORT of the exec/attach/port-forward streaming server (default:"
                                        + " ${DEFAULT-VALUE})")
                        .build());
        s.addOption(
                Specs.option(
                                "--pull-rate",
                                long.class,
                                "pullRate",
                                () -> pullRate,
                                v -> pullRate = v)
                        .defaultValue("32MiB")
                        .converters(new ByteRateConverter())
                        .description(
                                "how fast PullImage downloads layers, bytes per second (e.g. 8MiB,"
                                        + " 500KiB; 0 at once), with progress in containerd's content"
                                        + " service (default: ${DEFAULT-VALUE})")
                        .build());
        s.addOption(
                Specs.nriSocket(
                        () -> nriSocket,
                        v -> nriSocket = v,
                        "serve NRI's runtime side here: external NRI plugins (NRI's Go plugins,"
                                + " critest's NRI specs) connect and hook the fake's pods and"
                                + " containers, e.g. unix:///tmp/fake-nri.sock"));
        s.addOption(
                Specs.nriFailurePolicy(
                        () -> nriFailurePolicy,
                        v -> nriFailurePolicy = v,
                        "what an NRI plugin's failure does to the CRI call: Fail or Ignore"
                                + " (default: ${DEFAULT-VALUE}, as containerd)"));
        metrics.addTo(s);
        spec = s;
        return s;
    }

    private volatile FakeCriServer running;

    /** Stops serving as SIGTERM would. For tests. */
    void stopForTest() {
        FakeCriServer f = running;
        if (f != null) {
            f.close();
        }
    }

    @Override
    public Integer call() throws Exception {
        metrics.registry(spec.commandLine());
        int colon = streamingAddress.lastIndexOf(':');
        String host;
        int port;
        try {
            host = streamingAddress.substring(0, colon).replace("[", "").replace("]", "");
            port = Integer.parseInt(streamingAddress.substring(colon + 1));
        } catch (RuntimeException e) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(),
                    "--streaming-address must be HOST:PORT, not '" + streamingAddress + "'");
        }
        PrintWriter out = spec.commandLine().getOut();
        FakeCriServer.Builder b =
                FakeCriServer.builder()
                        .listen(listen)
                        .streamingAddress(host, port)
                        .pullRate(pullRate);
        if (metrics.registry != null) {
            b.meterRegistry(metrics.registry); // its hooks' (NRI plugins') latency and outcomes
        }
        if (nriSocket != null) {
            io.cri4j.nri.NriHost.Builder nri =
                    io.cri4j.nri.NriHost.builder(
                                    NriHostOutput.socket(spec.commandLine(), nriSocket))
                            .failurePolicy(nriFailurePolicy);
            if (metrics.registry != null) {
                nri.meterRegistry(metrics.registry);
            }
            b.addHookProvider(NriHostOutput.host(nri, out, "fake-runtime"));
        }
        FakeCriServer fake = b.build().start();
        running = fake;
        Thread hook = new Thread(fake::close, "fake-runtime-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        out.println(
                "fake CRI runtime serving runtime.v1 and runtime.v1alpha2 on "
                        + fake.endpoint()
                        + fake.streamingBaseUrl().map(a -> "; streaming on " + a).orElse(""));
        if (nriSocket != null) {
            out.println("fake-runtime: NRI plugins connect to " + nriSocket);
        }
        out.println("try: crictl --runtime-endpoint " + fake.endpoint() + " version");
        try (MetricsServer m = metrics.serve(() -> null)) {
            if (m != null) {
                out.println(
                        "metrics on " + m.baseUrl() + "metrics, health on /healthz and /readyz");
            }
            out.flush();
            fake.awaitTermination();
        }
        return 0;
    }
}

package io.cri4j.cli;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.internal.IoErrors;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code cri4j version}: asks a CRI runtime for its name and versions, over {@code runtime.v1} and,
 * when the runtime does not serve v1, over {@code runtime.v1alpha2} (as {@code crictl version} does).
 */
@Command(
        name = "version",
        mixinStandardHelpOptions = true,
        description = "Print the runtime's name, version and CRI API version.")
final class VersionCommand implements Callable<Integer> {

    /** The CRI API version our client speaks, sent in VersionRequest like crictl does. */
    static final String CLIENT_API_VERSION = "0.1.0";

    @Spec CommandSpec spec;

    @Option(
            names = {"-r", "--runtime-endpoint"},
            converter = EndpointConverter.class,
            defaultValue = EndpointConverter.DEFAULT_RUNTIME_ENDPOINT,
            description =
                    "CRI endpoint: unix:///path, /path or tcp://host:port (default: ${DEFAULT-VALUE})")
    CriEndpoint endpoint;

    @Option(
            names = "--timeout",
            defaultValue = "10s",
            converter = DurationConverter.class,
            description =
                    "time to wait for the runtime, e.g. 10s; at most 24h (default: ${DEFAULT-VALUE})")
    java.time.Duration timeout;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        ManagedChannel channel = CriChannels.newChannel(endpoint);
        try {
            String[] answer;
            try {
                var v =
                        io.cri4j.cri.v1.RuntimeServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                                .version(
                                        io.cri4j.cri.v1.VersionRequest.newBuilder()
                                                .setVersion(CLIENT_API_VERSION)
                                                .build());
                answer =
                        new String[] {
                            v.getVersion(),
                            v.getRuntimeName(),
                            v.getRuntimeVersion(),
                            v.getRuntimeApiVersion()
                        };
            } catch (StatusRuntimeException e) {
                if (e.getStatus().getCode() != Status.Code.UNIMPLEMENTED) {
                    throw e;
                }
                var v =
                        io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                                .version(
                                        io.cri4j.cri.v1alpha2.VersionRequest.newBuilder()
                                                .setVersion(CLIENT_API_VERSION)
                                                .build());
                answer =
                        new String[] {
                            v.getVersion(),
                            v.getRuntimeName(),
                            v.getRuntimeVersion(),
                            v.getRuntimeApiVersion()
                        };
            }
            out.println("Version:  " + answer[0]);
            out.println("RuntimeName:  " + answer[1]);
            out.println("RuntimeVersion:  " + answer[2]);
            out.println("RuntimeApiVersion:  " + answer[3]);
            out.flush();
            return 0;
        } catch (StatusRuntimeException e) {
            err.println(
                    "cri4j version: runtime at "
                            + endpoint
                            + " did not answer Version: "
                            + IoErrors.describe(e.getStatus()));
            err.flush();
            return 1;
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}

package io.cri4j.testing.fake;

import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.PortForwardRequest;

/**
 * Where the fake's {@code Exec}, {@code Attach} and {@code PortForward} answers point: each method returns the
 * URL of a streaming server that will serve the request (kubelet or a client then connects to it). The fake has
 * already checked that the container or sandbox exists and is running.
 *
 * <p>By default the fake answers with URLs of its built-in streaming-core server; give your own implementation to
 * {@link FakeCriServer.Builder#streamingUrls(StreamingUrls)} to point elsewhere, or {@link #unavailable()} to
 * have the three RPCs answer {@code UNIMPLEMENTED} (a runtime without streaming).
 */
public interface StreamingUrls {

    /** The URL serving this exec request. */
    String exec(ExecRequest request);

    /** The URL serving this attach request. */
    String attach(AttachRequest request);

    /** The URL serving this port-forward request. */
    String portForward(PortForwardRequest request);

    /** No streaming: the three RPCs answer UNIMPLEMENTED naming the reason. */
    static StreamingUrls unavailable() {
        return Unavailable.INSTANCE;
    }

    /** The {@link #unavailable()} implementation. */
    final class Unavailable implements StreamingUrls {
        static final Unavailable INSTANCE = new Unavailable();
        private static final String WHY =
                "streaming is disabled on this fake CRI runtime "
                        + "(configured with StreamingUrls.unavailable())";

        private Unavailable() {}

        private static RuntimeException unimplemented(String rpc) {
            return io.grpc.Status.UNIMPLEMENTED
                    .withDescription(rpc + ": " + WHY)
                    .asRuntimeException();
        }

        @Override
        public String exec(ExecRequest request) {
            throw unimplemented("Exec");
        }

        @Override
        public String attach(AttachRequest request) {
            throw unimplemented("Attach");
        }

        @Override
        public String portForward(PortForwardRequest request) {
            throw unimplemented("PortForward");
        }
    }
}

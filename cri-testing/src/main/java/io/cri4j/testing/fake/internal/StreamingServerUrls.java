package io.cri4j.testing.fake.internal;

import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.streaming.StreamingServer;
import io.cri4j.testing.fake.StreamingUrls;

/** URLs handed out by a streaming-core {@link StreamingServer} (it validates requests like kubelet). */
public record StreamingServerUrls(StreamingServer server) implements StreamingUrls {

    @Override
    public String exec(ExecRequest request) {
        return server.getExec(request).getUrl();
    }

    @Override
    public String attach(AttachRequest request) {
        return server.getAttach(request).getUrl();
    }

    @Override
    public String portForward(PortForwardRequest request) {
        return server.getPortForward(request).getUrl();
    }
}

package io.cri4j.streaming.internal;

import io.cri4j.streaming.StreamAuthorizer;
import io.cri4j.streaming.StreamingRuntime;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;

/** Everything a connection handler needs from its server. */
public record ServerContext(
        StreamingRuntime runtime,
        ExecutorService executor,
        RequestCache cache,
        String pathPrefix,
        Duration streamCreationTimeout,
        Duration idleTimeout,
        List<String> remoteCommandProtocols,
        List<String> portForwardProtocols,
        StreamAuthorizer authorizer,
        SessionLimiter sessions) {}

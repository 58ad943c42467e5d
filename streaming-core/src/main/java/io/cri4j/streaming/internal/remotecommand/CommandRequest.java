package io.cri4j.streaming.internal.remotecommand;

import java.util.List;

/** A consumed exec/attach request: what to run and which streams the client gets. */
public record CommandRequest(
        boolean exec,
        String containerId,
        List<String> cmd,
        boolean stdin,
        boolean stdout,
        boolean stderr,
        boolean tty) {}

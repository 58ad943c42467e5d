package io.cri4j.cli;

import io.cri4j.cri.CriEndpoint;
import picocli.CommandLine;

/**
 * Lets picocli options take CRI endpoints, reporting parse errors as usage errors (also for
 * commands added to the command line, as the examples' {@code demo}).
 */
public final class EndpointConverter implements CommandLine.ITypeConverter<CriEndpoint> {

    /** Default runtime endpoint: $CONTAINER_RUNTIME_ENDPOINT, else containerd's standard socket. */
    static final String DEFAULT_RUNTIME_ENDPOINT =
            "${env:CONTAINER_RUNTIME_ENDPOINT:-unix:///run/containerd/containerd.sock}";

    @Override
    public CriEndpoint convert(String value) {
        try {
            return CriEndpoint.parse(value);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
        }
    }
}

package io.cri4j.cri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CriEndpointTest {

    @Test
    void unixUri() {
        CriEndpoint e = CriEndpoint.parse("unix:///run/containerd/containerd.sock");
        assertThat(e.isUnix()).isTrue();
        assertThat(e.path()).isEqualTo(Path.of("/run/containerd/containerd.sock"));
        assertThat(e).hasToString("unix:///run/containerd/containerd.sock");
    }

    @Test
    void bareAbsolutePathIsUnix() {
        CriEndpoint e = CriEndpoint.parse("/var/run/crio/crio.sock");
        assertThat(e).isEqualTo(CriEndpoint.parse("unix:///var/run/crio/crio.sock"));
    }

    @Test
    void tcpHostPort() {
        CriEndpoint e = CriEndpoint.parse("tcp://127.0.0.1:10010");
        assertThat(e.isUnix()).isFalse();
        assertThat(e.host()).isEqualTo("127.0.0.1");
        assertThat(e.port()).isEqualTo(10010);
        assertThat(e).hasToString("tcp://127.0.0.1:10010");
    }

    @Test
    void tcpIpv6() {
        CriEndpoint e = CriEndpoint.parse("tcp://[::1]:7000");
        assertThat(e.host()).isEqualTo("::1");
        assertThat(e).hasToString("tcp://[::1]:7000");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "  ",
                "containerd.sock",
                "run/containerd.sock",
                "unix://relative/x.sock",
                "npipe:////./pipe/containerd",
                "http://127.0.0.1:80",
                "tcp://127.0.0.1",
                "tcp://127.0.0.1:0",
                "tcp://127.0.0.1:70000",
                "tcp://:80",
                "tcp://host:80/path"
            })
    void rejectsWithAClearMessage(String input) {
        assertThatThrownBy(() -> CriEndpoint.parse(input))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("CRI endpoint");
    }

    @Test
    void unsupportedSchemeIsNamed() {
        assertThatThrownBy(() -> CriEndpoint.parse("npipe:////./pipe/x"))
                .hasMessageContaining("unsupported scheme 'npipe'")
                .hasMessageContaining("unix:///absolute/path");
    }

    @Test
    void tooLongUnixPathIsRejected() {
        String longPath = "/tmp/" + "x".repeat(120) + ".sock";
        assertThatThrownBy(() -> CriEndpoint.parse("unix://" + longPath))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most 107");
    }

    @Test
    void accessorsOfTheOtherKindFail() {
        assertThatThrownBy(() -> CriEndpoint.parse("/a.sock").host())
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> CriEndpoint.parse("tcp://h:1").path())
                .isInstanceOf(IllegalStateException.class);
    }
}

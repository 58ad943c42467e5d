package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The rules of an {@link NriHost}'s socket file, as cri4j's other servers keep them. */
class NriHostSocketIT {

    @TempDir Path dir;

    private final RecordingHost host = new RecordingHost();

    @Test
    void createsDirectoriesSetsTheModeAndRemovesTheSocketOnClose() throws Exception {
        Path socket = dir.resolve("run/nri/nri.sock");
        try (NriHost nri = NriHost.builder(socket).build()) {
            nri.start(host);
            assertThat(Files.getPosixFilePermissions(socket))
                    .isEqualTo(PosixFilePermissions.fromString("rw-------"));
            assertThatThrownBy(() -> nri.start(host))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("was started already");
        }
        assertThat(socket).doesNotExist();
        try (NriHost nri = NriHost.builder(socket).socketMode("0660").build()) {
            nri.start(host);
            assertThat(Files.getPosixFilePermissions(socket))
                    .isEqualTo(PosixFilePermissions.fromString("rw-rw----"));
        }
    }

    @Test
    void replacesAStaleSocketAndRefusesALiveOneOrAFile() throws Exception {
        Path socket = dir.resolve("nri.sock");
        try (ServerSocketChannel stale = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            stale.bind(
                    UnixDomainSocketAddress.of(socket)); // closed below without removing the file
        }
        assertThat(socket).exists();
        try (NriHost nri = NriHost.builder(socket).build()) {
            nri.start(host);
            try (NriHost second = NriHost.builder(socket).build()) {
                assertThatThrownBy(() -> second.start(host))
                        .isInstanceOf(IOException.class)
                        .hasMessageContaining("cannot serve NRI on " + socket)
                        .hasMessageContaining("another server already owns " + socket);
            }
            assertThat(socket).as("the first host's socket is left alone").exists();
        }
        Path file = dir.resolve("not-a-socket");
        Files.writeString(file, "data");
        try (NriHost nri = NriHost.builder(file).build()) {
            assertThatThrownBy(() -> nri.start(host))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("exists and is not a unix socket");
        }
        assertThat(Files.readString(file)).isEqualTo("data");
    }
}

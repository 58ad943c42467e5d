package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class RemoteCommandTest {

    @Test
    void waitForGivesTheExitCode() throws Exception {
        assertThat(command(CompletableFuture.completedFuture(3)).waitFor()).isEqualTo(3);
    }

    @Test
    void waitForThrowsTheSessionsOwnIoFailure() {
        StreamingException status = new StreamingException("command not found", 404);
        assertThatThrownBy(() -> command(CompletableFuture.failedFuture(status)).waitFor())
                .isSameAs(status);
    }

    @Test
    void waitForWrapsAnyOtherFailureInAnIoException() {
        IllegalStateException bug = new IllegalStateException("bad status");
        assertThatThrownBy(() -> command(CompletableFuture.failedFuture(bug)).waitFor())
                .isExactlyInstanceOf(IOException.class)
                .hasCause(bug);
    }

    private static RemoteCommand command(CompletableFuture<Integer> exit) {
        return new RemoteCommand() {
            @Override
            public String protocol() {
                return "v5.channel.k8s.io";
            }

            @Override
            public OutputStream stdin() {
                return OutputStream.nullOutputStream();
            }

            @Override
            public InputStream stdout() {
                return InputStream.nullInputStream();
            }

            @Override
            public InputStream stderr() {
                return InputStream.nullInputStream();
            }

            @Override
            public void resize(TerminalSize size) {}

            @Override
            public CompletableFuture<Integer> exitCode() {
                return exit;
            }

            @Override
            public void close() {}
        };
    }
}

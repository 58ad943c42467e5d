package io.cri4j.nri.internal.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SocketWatcherTest {

    @TempDir Path tmp;

    @Test
    void tellsWhenTheSocketAppearsAndFollowsDirectoriesCreatedOnTheWay() throws Exception {
        Path socket = tmp.resolve("run").resolve("nri").resolve("nri.sock");
        Semaphore changes = new Semaphore(0);
        try (SocketWatcher w = SocketWatcher.start(socket, changes::release, "test-watch")) {
            // an unrelated file says nothing
            Files.writeString(tmp.resolve("other"), "x");
            Files.createDirectories(socket.getParent());
            assertThat(changes.tryAcquire(5, TimeUnit.SECONDS)).isTrue();
            changes.drainPermits();
            Files.writeString(socket.getParent().resolve("unrelated.sock"), "");
            Files.writeString(socket, "");
            assertThat(changes.tryAcquire(5, TimeUnit.SECONDS)).isTrue();
            changes.drainPermits();
            // removed and created again, as a runtime starting over does
            Files.delete(socket);
            Files.writeString(socket, "");
            assertThat(changes.tryAcquire(5, TimeUnit.SECONDS)).isTrue();
        }
        Thread.State state = null;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("test-watch")) {
                t.join(5000);
                state = t.getState();
            }
        }
        assertThat(state).as("the watch thread ended").isIn(null, Thread.State.TERMINATED);
    }

    @Test
    void saysNothingForOtherEntries() throws Exception {
        Path socket = tmp.resolve("nri.sock");
        Semaphore changes = new Semaphore(0);
        try (SocketWatcher w = SocketWatcher.start(socket, changes::release, "test-watch-2")) {
            Files.writeString(tmp.resolve("a"), "");
            Files.createDirectories(tmp.resolve("b"));
            Files.writeString(socket, "");
            assertThat(changes.tryAcquire(5, TimeUnit.SECONDS)).isTrue();
            assertThat(changes.tryAcquire(300, TimeUnit.MILLISECONDS))
                    .as("one event, for the socket only")
                    .isFalse();
        }
    }
}

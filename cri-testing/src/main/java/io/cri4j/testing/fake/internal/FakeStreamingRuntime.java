package io.cri4j.testing.fake.internal;

import io.cri4j.cri.v1.ContainerEventType;
import io.cri4j.streaming.PortForwardStream;
import io.cri4j.streaming.RemoteCommandStreams;
import io.cri4j.streaming.StreamingRuntime;
import io.cri4j.testing.fake.ExecContext;
import io.cri4j.testing.fake.internal.FakeState.ContainerRecord;
import io.cri4j.testing.fake.internal.FakeState.SandboxRecord;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;

/**
 * The fake's sessions behind streaming-core: exec runs the command as a host process; attach connects to the
 * container's process ({@link FakeContainerProcesses}: its stdin, stdout and stderr) until the container stops or
 * the client leaves, and for a container that runs no process behaves as if its main process were {@code cat}
 * (stdin echoed to stdout and its log); port-forward connects to the mapped local address (default {@code 127.0.0.1:<port>}, as for a
 * host-network pod).
 */
public final class FakeStreamingRuntime implements StreamingRuntime {

    private final FakeState state;
    private final Map<Integer, InetSocketAddress> portMap;
    private final ExecutorService pumps;
    private final FakeContainerProcesses processes;

    public FakeStreamingRuntime(
            FakeState state, Map<Integer, InetSocketAddress> portMap, ExecutorService pumps) {
        this(state, portMap, pumps, null);
    }

    /** With {@code processes}, attach connects to a container's process where it runs one. */
    public FakeStreamingRuntime(
            FakeState state,
            Map<Integer, InetSocketAddress> portMap,
            ExecutorService pumps,
            FakeContainerProcesses processes) {
        this.state = state;
        this.portMap = Map.copyOf(portMap);
        this.pumps = pumps;
        this.processes = processes;
    }

    @Override
    public int exec(String containerId, java.util.List<String> cmd, RemoteCommandStreams streams)
            throws Exception {
        ContainerRecord c = state.runningContainer(containerId);
        ExecContext context =
                new ExecContext(
                        containerId,
                        c.sandboxId(),
                        cmd,
                        c.env(),
                        c.config().getWorkingDir(),
                        Duration.ZERO);
        Interrupter session = new Interrupter();
        streams.onClose(session::interrupt); // the client left: kill the process
        try {
            return HostProcessStreams.exec(
                    context,
                    streams.stdin().orElse(null),
                    streams.stdout().orElse(null),
                    streams.stderr().orElse(null),
                    streams.tty(),
                    pumps);
        } finally {
            session.disarm();
        }
    }

    @Override
    public void attach(String containerId, RemoteCommandStreams streams) throws Exception {
        state.runningContainer(containerId);
        CountDownLatch ended = new CountDownLatch(1);
        Interrupter session = new Interrupter();
        AutoCloseable subscription =
                state.subscribe(
                        e -> {
                            if (e.getContainerId().equals(containerId)
                                    && (e.getContainerEventType()
                                                    == ContainerEventType.CONTAINER_STOPPED_EVENT
                                            || e.getContainerEventType()
                                                    == ContainerEventType
                                                            .CONTAINER_DELETED_EVENT)) {
                                ended.countDown();
                                session.interrupt(); // unblock a pending stdin read
                            }
                        });
        streams.onClose(ended::countDown);
        try {
            InputStream in = streams.stdin().orElse(null);
            OutputStream out = streams.stdout().orElse(null);
            if (processes != null
                    && processes.attach(
                            containerId, in, out, streams.stderr().orElse(null), ended)) {
                return;
            }
            if (in == null) {
                ended.await();
                return;
            }
            byte[] buf = new byte[8192];
            int n;
            while (ended.getCount() > 0 && (n = in.read(buf)) >= 0) {
                if (out != null) {
                    out.write(buf, 0, n);
                    out.flush();
                }
                if (processes != null) {
                    processes.echo(containerId, buf, n);
                }
            }
        } catch (InterruptedException | java.io.InterruptedIOException e) {
            // the container stopped or the client left
        } finally {
            subscription.close();
            session.disarm();
        }
    }

    @Override
    public void portForward(String podSandboxId, int port, PortForwardStream stream)
            throws Exception {
        SandboxRecord s = state.sandbox(podSandboxId);
        if (!s.ready()) {
            throw new IOException("pod sandbox " + podSandboxId + " is not running");
        }
        InetSocketAddress target =
                portMap.getOrDefault(
                        port, new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        Interrupter session = new Interrupter();
        stream.onClose(session::interrupt);
        try {
            HostProcessStreams.forward(target, stream.input(), stream.output(), pumps);
        } catch (IOException e) {
            throw new IOException(
                    "failed to connect to "
                            + target.getHostString()
                            + ":"
                            + target.getPort()
                            + " for port "
                            + port
                            + " of pod sandbox "
                            + podSandboxId
                            + ": "
                            + e.getMessage(),
                    e);
        } finally {
            session.disarm();
        }
    }

    /** Interrupts the session thread only while the session runs (the thread is pooled and reused after). */
    private static final class Interrupter {
        private final Thread thread = Thread.currentThread();
        private boolean armed = true;

        synchronized void interrupt() {
            if (armed) {
                thread.interrupt();
            }
        }

        synchronized void disarm() {
            armed = false;
            Thread.interrupted();
        }
    }
}

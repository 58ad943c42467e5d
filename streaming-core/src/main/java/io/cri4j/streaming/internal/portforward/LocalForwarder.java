package io.cri4j.streaming.internal.portforward;

import io.cri4j.streaming.LocalPortForward;
import io.cri4j.streaming.PortForwardSession;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Listens locally; every accepted connection becomes a forwarded connection of the session. */
public final class LocalForwarder implements LocalPortForward {
    private static final Logger LOG = LoggerFactory.getLogger(LocalForwarder.class);
    private final PortForwardSession session;
    private final int remotePort;
    private final ServerSocket listener;
    private final ExecutorService threads =
            Executors.newCachedThreadPool(
                    r -> {
                        Thread t = new Thread(r, "cri4j-port-forward");
                        t.setDaemon(true);
                        return t;
                    });
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();

    public LocalForwarder(PortForwardSession session, int remotePort, InetSocketAddress listen)
            throws IOException {
        this.session = session;
        this.remotePort = remotePort;
        this.listener = new ServerSocket();
        listener.bind(listen);
        threads.execute(this::acceptLoop);
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) listener.getLocalSocketAddress();
    }

    private void acceptLoop() {
        while (!closed.get()) {
            Socket s;
            try {
                s = listener.accept();
            } catch (IOException e) {
                return;
            }
            sockets.add(s);
            threads.execute(() -> handle(s));
        }
    }

    private void handle(Socket s) {
        try (s) {
            PortForwardSession.Connection c = session.open(remotePort);
            try (c) {
                threads.execute(
                        () -> {
                            try {
                                copy(s.getInputStream(), c.output());
                                c.output().close();
                            } catch (IOException e) {
                                // one side went away
                            }
                        });
                copy(c.input(), s.getOutputStream());
                s.shutdownOutput();
                String err = c.error().getNow("");
                if (!err.isEmpty()) {
                    LOG.warn("port-forward to {} reported: {}", remotePort, err);
                }
            }
        } catch (IOException e) {
            LOG.debug("forwarded connection ended: {}", e.toString());
        } finally {
            sockets.remove(s);
        }
    }

    private static void copy(InputStream in, OutputStream out) throws IOException {
        byte[] b = new byte[32 * 1024];
        int n;
        while ((n = in.read(b)) >= 0) {
            out.write(b, 0, n);
            out.flush();
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing
        }
        for (Socket s : sockets) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing
            }
        }
        session.close();
        threads.shutdownNow();
        try {
            threads.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

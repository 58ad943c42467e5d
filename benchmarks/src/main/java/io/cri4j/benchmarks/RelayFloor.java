package io.cri4j.benchmarks;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.proxy.CriProxy;
import io.grpc.ManagedChannel;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The floor under the proxy's relayed-call latency: {@code Version} against a runtime direct,
 * through a bare byte relay on blocking JDK sockets (two threads per connection), through a bare
 * Netty epoll byte relay (one event loop, no HTTP/2 parsing), and through {@link CriProxy},
 * interleaved call by call; then CPU per call of each relay's threads (and of the runtime with
 * {@code -DbackendPid=PID}, from {@code /proc}, in 10 ms ticks). With {@code -Dtrace=MILLIS} each
 * series also runs alone for that long and prints its start and end in {@code System.nanoTime()}
 * (CLOCK_MONOTONIC), to cut a {@code perf record -k CLOCK_MONOTONIC} trace by series. With
 * {@code serve} for the number of calls it only serves the relays and the proxy, printing
 * {@code NAME=SOCKET} lines, for a client in another process ({@code benchmarks/go}). Linux only
 * (epoll). Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.RelayFloor 10000 /run/containerd/containerd.sock}.
 */
public final class RelayFloor {
    private RelayFloor() {}

    /** @param args calls per series, and the runtime's unix socket path */
    public static void main(String[] args) throws Exception {
        boolean serve = args[0].equals("serve");
        int n = serve ? 0 : Integer.parseInt(args[0]);
        Path backend = Path.of(args[1]);
        Path dir = Files.createTempDirectory("cri4j-floor");
        blockingRelay(dir.resolve("blocking.sock"), backend);
        EventLoopGroup nettyLoop = nettyRelay(dir.resolve("netty.sock"), backend);
        CriProxy proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(backend)
                        .build()
                        .start();
        if (serve) { // for a client in another process (benchmarks/go: kubelet's grpc-go)
            System.out.println("blocking relay=" + dir.resolve("blocking.sock"));
            System.out.println("netty relay=" + dir.resolve("netty.sock"));
            System.out.println("cri4j proxy=" + dir.resolve("proxy.sock"));
            System.out.flush();
            Thread.currentThread().join(); // until killed
        }
        String[] names = {"direct", "blocking relay", "netty relay", "cri4j proxy"};
        Path[] sockets = {
            backend,
            dir.resolve("blocking.sock"),
            dir.resolve("netty.sock"),
            dir.resolve("proxy.sock")
        };
        ManagedChannel[] ch = new ManagedChannel[sockets.length];
        RuntimeServiceGrpc.RuntimeServiceBlockingStub[] stubs =
                new RuntimeServiceGrpc.RuntimeServiceBlockingStub[sockets.length];
        for (int k = 0; k < sockets.length; k++) {
            ch[k] = KubeletLikeChannels.newChannel(CriEndpoint.unix(sockets[k]));
            stubs[k] = RuntimeServiceGrpc.newBlockingStub(ch[k]);
        }
        try {
            VersionRequest v = VersionRequest.newBuilder().setVersion("0.1.0").build();
            for (int i = 0; i < n / 2; i++) { // warm-up
                for (var s : stubs) {
                    s.version(v);
                }
            }
            long[][] t = new long[stubs.length][n];
            for (int i = 0; i < n; i++) {
                for (int k = 0; k < stubs.length; k++) {
                    long t0 = System.nanoTime();
                    stubs[k].version(v);
                    t[k][i] = System.nanoTime() - t0;
                }
            }
            for (long[] a : t) {
                Arrays.sort(a);
            }
            for (int k = 0; k < t.length; k++) {
                System.out.printf(
                        "%-15s p50 %7.1f us (%.2fx)  p90 %7.1f us (%.2fx)%n",
                        names[k],
                        t[k][n / 2] / 1e3,
                        (double) t[k][n / 2] / t[0][n / 2],
                        t[k][n * 9 / 10] / 1e3,
                        (double) t[k][n * 9 / 10] / t[0][n * 9 / 10]);
            }
            for (int k = 0; k < stubs.length; k++) {
                var stub = stubs[k];
                TraceMarks.runAlone(names[k].replace(' ', '-'), () -> stub.version(v));
            }
            // CPU per call of every busy thread, each relay measured on its own
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            for (int k = 1; k < stubs.length; k++) {
                Map<Long, Long> before = new HashMap<>();
                for (long id : mx.getAllThreadIds()) {
                    before.put(id, mx.getThreadCpuTime(id));
                }
                long backendBefore = backendCpuNanos();
                for (int i = 0; i < n; i++) {
                    stubs[k].version(v);
                }
                StringBuilder sb = new StringBuilder();
                if (backendBefore >= 0) {
                    sb.append(
                            String.format(
                                    " backend=%.1f us",
                                    (backendCpuNanos() - backendBefore) / 1e3 / n));
                }
                for (ThreadInfo info : mx.getThreadInfo(mx.getAllThreadIds())) {
                    if (info != null) {
                        long d =
                                mx.getThreadCpuTime(info.getThreadId())
                                        - before.getOrDefault(info.getThreadId(), 0L);
                        if (d > n * 2000L) {
                            sb.append(
                                    String.format(
                                            " %s=%.1f us", info.getThreadName(), d / 1e3 / n));
                        }
                    }
                }
                System.out.printf("%-15s CPU per call:%s%n", names[k], sb);
            }
        } finally {
            for (ManagedChannel c : ch) {
                c.shutdownNow();
            }
            proxy.close();
            nettyLoop.shutdownGracefully();
        }
    }

    /** CPU time of the process {@code -DbackendPid} names (utime + stime), or -1. */
    private static long backendCpuNanos() throws java.io.IOException {
        String pid = System.getProperty("backendPid");
        if (pid == null) {
            return -1;
        }
        String stat = Files.readString(Path.of("/proc", pid, "stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        // fields 14 and 15 of proc(5), counted from the state field (3)
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
    }

    /** Copies bytes one way until end of stream, on a daemon thread. */
    private static void pump(SocketChannel in, SocketChannel out) {
        Thread t =
                new Thread(
                        () -> {
                            ByteBuffer b = ByteBuffer.allocateDirect(64 * 1024);
                            try {
                                while (in.read(b) >= 0) {
                                    b.flip();
                                    while (b.hasRemaining()) {
                                        out.write(b);
                                    }
                                    b.clear();
                                }
                            } catch (java.io.IOException closed) {
                                // the other side went away: this direction is done
                            }
                        },
                        "blocking-relay");
        t.setDaemon(true);
        t.start();
    }

    private static void blockingRelay(Path listen, Path backend) throws java.io.IOException {
        ServerSocketChannel ss = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        ss.bind(UnixDomainSocketAddress.of(listen));
        Thread accept =
                new Thread(
                        () -> {
                            try {
                                while (true) {
                                    SocketChannel c = ss.accept();
                                    SocketChannel b =
                                            SocketChannel.open(UnixDomainSocketAddress.of(backend));
                                    pump(c, b);
                                    pump(b, c);
                                }
                            } catch (java.io.IOException closed) {
                                // the benchmark is over
                            }
                        },
                        "blocking-relay-accept");
        accept.setDaemon(true);
        accept.start();
    }

    private static EventLoopGroup nettyRelay(Path listen, Path backend)
            throws InterruptedException {
        EventLoopGroup g = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        new ServerBootstrap()
                .group(g)
                .channel(EpollServerDomainSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(
                        new ChannelInitializer<Channel>() {
                            @Override
                            protected void initChannel(Channel c) {
                                new Bootstrap()
                                        .group(c.eventLoop())
                                        .channel(EpollDomainSocketChannel.class)
                                        .handler(new Forward(c))
                                        .connect(new DomainSocketAddress(backend.toString()))
                                        .addListener(
                                                (ChannelFutureListener)
                                                        f -> {
                                                            c.pipeline()
                                                                    .addLast(
                                                                            new Forward(
                                                                                    f.channel()));
                                                            c.config().setAutoRead(true);
                                                        });
                            }
                        })
                .bind(new DomainSocketAddress(listen.toString()))
                .sync();
        return g;
    }

    /** Writes what it reads to the other channel, flushing once per read. */
    private static final class Forward extends ChannelInboundHandlerAdapter {
        private final Channel out;

        Forward(Channel out) {
            this.out = out;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            out.write(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            out.flush();
        }
    }
}

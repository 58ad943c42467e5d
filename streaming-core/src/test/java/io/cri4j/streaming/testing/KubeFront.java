package io.cri4j.streaming.testing;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.streaming.StreamingServer;
import io.grpc.StatusRuntimeException;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A test stand-in for the API server plus kubelet, enough for kubectl exec/attach/port-forward:
 * answers discovery and the pod GET, turns the exec/attach/portforward request into a CRI-style
 * call on the {@link StreamingServer} and relays the (upgraded) connection to the returned URL,
 * byte for byte, as kubelet does by default. Pod "p" in any namespace has container "c".
 */
public final class KubeFront implements AutoCloseable {
    private final StreamingServer server;
    private final ServerSocket listener;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    public final List<String> upgradeRequests = new java.util.concurrent.CopyOnWriteArrayList<>();

    public KubeFront(StreamingServer server) throws IOException {
        this.server = server;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = new Thread(this::acceptLoop, "kube-front-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public String url() {
        return "http://127.0.0.1:" + listener.getLocalPort();
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            try {
                Socket s = listener.accept();
                sockets.add(s);
                Thread t = new Thread(() -> serve(s), "kube-front-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private record Request(String method, String target, List<String[]> headers) {
        String header(String name) {
            for (String[] h : headers) {
                if (h[0].equalsIgnoreCase(name)) {
                    return h[1];
                }
            }
            return null;
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                break;
            }
            if (c != '\r') {
                b.write(c);
            }
        }
        if (c < 0 && b.size() == 0) {
            return null;
        }
        return b.toString(StandardCharsets.ISO_8859_1);
    }

    private static Request readRequest(InputStream in) throws IOException {
        String line = readLine(in);
        if (line == null || line.isEmpty()) {
            return null;
        }
        String[] parts = line.split(" ");
        List<String[]> headers = new ArrayList<>();
        String h;
        while ((h = readLine(in)) != null && !h.isEmpty()) {
            int i = h.indexOf(':');
            headers.add(new String[] {h.substring(0, i).trim(), h.substring(i + 1).trim()});
        }
        Request r = new Request(parts[0], parts[1], headers);
        String cl = r.header("Content-Length");
        if (cl != null) {
            in.readNBytes(Integer.parseInt(cl));
        }
        return r;
    }

    private void serve(Socket s) {
        try (s) {
            InputStream in = new BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            while (true) {
                Request r = readRequest(in);
                if (r == null) {
                    return;
                }
                URI u = URI.create(r.target());
                String path = u.getPath();
                String[] seg = path.split("/");
                if (path.matches("/api/v1/namespaces/[^/]+/pods/[^/]+/(exec|attach|portforward)")) {
                    relay(r, seg[4], seg[6], seg[7], parseQuery(u.getRawQuery()), in, s);
                    return;
                }
                JsonObject body;
                int code = 200;
                if (path.equals("/api")) {
                    body = apiVersions(s);
                } else if (path.equals("/apis")) {
                    body = new JsonObject();
                    body.addProperty("kind", "APIGroupList");
                    body.addProperty("apiVersion", "v1");
                    body.add("groups", new JsonArray());
                } else if (path.equals("/api/v1")) {
                    body = resourceList();
                } else if (path.equals("/version")) {
                    body = new JsonObject();
                    body.addProperty("major", "1");
                    body.addProperty("minor", "33");
                    body.addProperty("gitVersion", "v1.33.0");
                } else if (path.matches("/api/v1/namespaces/[^/]+/pods/[^/]+")) {
                    body = pod(seg[4], seg[6]);
                } else {
                    code = 404;
                    body = new JsonObject();
                    body.addProperty("kind", "Status");
                    body.addProperty("apiVersion", "v1");
                    body.addProperty("status", "Failure");
                    body.addProperty("reason", "NotFound");
                    body.addProperty("code", 404);
                }
                byte[] b = body.toString().getBytes(StandardCharsets.UTF_8);
                out.write(
                        ("HTTP/1.1 "
                                        + code
                                        + (code == 200 ? " OK" : " Not Found")
                                        + "\r\nContent-Type: application/json\r\nContent-Length: "
                                        + b.length
                                        + "\r\n\r\n")
                                .getBytes(StandardCharsets.ISO_8859_1));
                out.write(b);
                out.flush();
            }
        } catch (IOException e) {
            // connection gone
        } finally {
            sockets.remove(s);
        }
    }

    private static Map<String, List<String>> parseQuery(String q) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        if (q == null) {
            return m;
        }
        for (String kv : q.split("&")) {
            int i = kv.indexOf('=');
            String k = URLDecoder.decode(i < 0 ? kv : kv.substring(0, i), StandardCharsets.UTF_8);
            String v = i < 0 ? "" : URLDecoder.decode(kv.substring(i + 1), StandardCharsets.UTF_8);
            m.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
        }
        return m;
    }

    private static boolean flag(Map<String, List<String>> q, String name) {
        List<String> v = q.get(name);
        return v != null && !v.isEmpty() && (v.get(0).equals("true") || v.get(0).equals("1"));
    }

    private void relay(
            Request r,
            String ns,
            String pod,
            String kind,
            Map<String, List<String>> q,
            InputStream clientIn,
            Socket client)
            throws IOException {
        upgradeRequests.add(
                r.method()
                        + " "
                        + kind
                        + " "
                        + r.header("Upgrade")
                        + " "
                        + r.header("Sec-WebSocket-Protocol")
                        + " "
                        + r.header("X-Stream-Protocol-Version"));
        String url;
        try {
            String container =
                    "ctr-" + (q.containsKey("container") ? q.get("container").get(0) : "c");
            url =
                    switch (kind) {
                        case "exec" ->
                                server.getExec(
                                                ExecRequest.newBuilder()
                                                        .setContainerId(container)
                                                        .addAllCmd(
                                                                q.getOrDefault(
                                                                        "command", List.of()))
                                                        .setStdin(flag(q, "stdin"))
                                                        .setStdout(flag(q, "stdout"))
                                                        .setStderr(
                                                                flag(q, "stderr")
                                                                        && !flag(q, "tty"))
                                                        .setTty(flag(q, "tty"))
                                                        .build())
                                        .getUrl();
                        case "attach" ->
                                server.getAttach(
                                                AttachRequest.newBuilder()
                                                        .setContainerId(container)
                                                        .setStdin(flag(q, "stdin"))
                                                        .setStdout(flag(q, "stdout"))
                                                        .setStderr(
                                                                flag(q, "stderr")
                                                                        && !flag(q, "tty"))
                                                        .setTty(flag(q, "tty"))
                                                        .build())
                                        .getUrl();
                        default -> {
                            PortForwardRequest.Builder b =
                                    PortForwardRequest.newBuilder()
                                            .setPodSandboxId("sandbox-" + ns + "-" + pod);
                            yield server.getPortForward(b.build()).getUrl();
                        }
                    };
        } catch (StatusRuntimeException e) {
            byte[] b = e.getStatus().getDescription().getBytes(StandardCharsets.UTF_8);
            client.getOutputStream()
                    .write(
                            ("HTTP/1.1 400 Bad Request\r\nContent-Length: "
                                            + b.length
                                            + "\r\nConnection: close\r\n\r\n")
                                    .getBytes(StandardCharsets.ISO_8859_1));
            client.getOutputStream().write(b);
            return;
        }
        URI target = URI.create(url);
        String query =
                r.target().contains("?") ? r.target().substring(r.target().indexOf('?')) : "";
        try (Socket backend = new Socket(target.getHost(), target.getPort())) {
            sockets.add(backend);
            StringBuilder head = new StringBuilder();
            head.append(r.method())
                    .append(' ')
                    .append(target.getRawPath())
                    .append(query)
                    .append(" HTTP/1.1\r\n");
            head.append("Host: ")
                    .append(target.getHost())
                    .append(':')
                    .append(target.getPort())
                    .append("\r\n");
            for (String[] h : r.headers()) {
                if (!h[0].equalsIgnoreCase("Host")) {
                    head.append(h[0]).append(": ").append(h[1]).append("\r\n");
                }
            }
            head.append("\r\n");
            OutputStream bo = backend.getOutputStream();
            bo.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
            bo.flush();
            Thread up = new Thread(() -> pipe(clientIn, backend, true), "kube-front-up");
            up.setDaemon(true);
            up.start();
            pipe(backend.getInputStream(), client, false);
            try {
                up.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        } finally {
            client.close();
        }
    }

    private static void pipe(InputStream in, Socket to, boolean up) {
        byte[] buf = new byte[64 * 1024];
        try {
            OutputStream out = to.getOutputStream();
            int n;
            while ((n = in.read(buf)) >= 0) {
                out.write(buf, 0, n);
                out.flush();
            }
            to.shutdownOutput();
        } catch (IOException e) {
            try {
                to.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    private JsonObject apiVersions(Socket s) {
        JsonObject o = new JsonObject();
        o.addProperty("kind", "APIVersions");
        JsonArray v = new JsonArray();
        v.add("v1");
        o.add("versions", v);
        JsonArray cidrs = new JsonArray();
        JsonObject c = new JsonObject();
        c.addProperty("clientCIDR", "0.0.0.0/0");
        c.addProperty("serverAddress", "127.0.0.1:" + listener.getLocalPort());
        cidrs.add(c);
        o.add("serverAddressByClientCIDRs", cidrs);
        return o;
    }

    private static JsonObject resourceList() {
        JsonObject o = new JsonObject();
        o.addProperty("kind", "APIResourceList");
        o.addProperty("groupVersion", "v1");
        JsonArray rs = new JsonArray();
        rs.add(resource("pods", "Pod", true, List.of("get", "list")));
        rs.add(resource("pods/exec", "PodExecOptions", true, List.of("create", "get")));
        rs.add(resource("pods/attach", "PodAttachOptions", true, List.of("create", "get")));
        rs.add(
                resource(
                        "pods/portforward",
                        "PodPortForwardOptions",
                        true,
                        List.of("create", "get")));
        o.add("resources", rs);
        return o;
    }

    private static JsonObject resource(String name, String kind, boolean ns, List<String> verbs) {
        JsonObject r = new JsonObject();
        r.addProperty("name", name);
        r.addProperty("singularName", name.contains("/") ? "" : "pod");
        r.addProperty("namespaced", ns);
        r.addProperty("kind", kind);
        JsonArray v = new JsonArray();
        verbs.forEach(v::add);
        r.add("verbs", v);
        return r;
    }

    private static JsonObject pod(String ns, String name) {
        JsonObject o = new JsonObject();
        o.addProperty("kind", "Pod");
        o.addProperty("apiVersion", "v1");
        JsonObject md = new JsonObject();
        md.addProperty("name", name);
        md.addProperty("namespace", ns);
        md.addProperty("uid", "00000000-0000-0000-0000-000000000001");
        o.add("metadata", md);
        JsonObject spec = new JsonObject();
        JsonArray cs = new JsonArray();
        JsonObject c = new JsonObject();
        c.addProperty("name", "c");
        c.addProperty("image", "busybox");
        c.addProperty("stdin", true);
        c.addProperty("tty", true);
        cs.add(c);
        spec.add("containers", cs);
        o.add("spec", spec);
        JsonObject st = new JsonObject();
        st.addProperty("phase", "Running");
        JsonArray css = new JsonArray();
        JsonObject cst = new JsonObject();
        cst.addProperty("name", "c");
        cst.addProperty("ready", true);
        JsonObject state = new JsonObject();
        state.add("running", new JsonObject());
        cst.add("state", state);
        css.add(cst);
        st.add("containerStatuses", css);
        o.add("status", st);
        return o;
    }

    @Override
    public void close() throws IOException {
        listener.close();
        for (Socket s : sockets) {
            s.close();
        }
        try {
            acceptor.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

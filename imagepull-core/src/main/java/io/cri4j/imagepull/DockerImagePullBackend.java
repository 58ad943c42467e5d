package io.cri4j.imagepull;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.imagepull.internal.UnixHttpClient;
import io.netty.handler.codec.http.HttpMethod;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;

/**
 * Pulls through the Docker Engine API ({@code POST /images/create} over {@code /var/run/docker.sock}),
 * turning its JSON progress messages into per-layer progress.
 *
 * <p>Download bytes come from "Downloading" messages ({@code progressDetail.current/total}); a layer
 * is complete at "Verifying Checksum", "Download complete", "Pull complete" or "Already exists".
 * "Extracting" counters are not download bytes and are not mixed in (they restart from zero, which
 * is what makes a naive percentage go backwards). A message with {@code errorDetail} (or the older
 * {@code error}) fails the pull with its text, even though the HTTP status was 200.
 */
public final class DockerImagePullBackend implements ImagePullBackend {

    /** Docker's default socket. */
    public static final Path DEFAULT_SOCKET = Path.of("/var/run/docker.sock");

    private static final Pattern LAYER_ID = Pattern.compile("[0-9a-f]{12}");

    private final Path socket;
    private final UnixHttpClient http;
    private volatile boolean closed;

    private DockerImagePullBackend(Path socket) {
        this.socket = socket;
        this.http = new UnixHttpClient(socket);
    }

    /**
     * @param socket the Docker daemon's unix socket
     * @return a backend
     */
    public static DockerImagePullBackend create(Path socket) {
        return new DockerImagePullBackend(socket);
    }

    @Override
    public String name() {
        return "docker unix://" + socket;
    }

    @Override
    public CompletableFuture<Optional<ImageInfo>> imageStatus(String image) {
        return http.send(HttpMethod.GET, "/images/" + image + "/json", Map.of(), null)
                .thenApply(
                        r -> {
                            if (r.status() == 404) {
                                return Optional.<ImageInfo>empty();
                            }
                            if (r.status() != 200) {
                                throw new IllegalStateException(
                                        "docker: inspecting "
                                                + image
                                                + " answered "
                                                + r.status()
                                                + " "
                                                + r.reason()
                                                + ": "
                                                + errorMessage(r.body()));
                            }
                            JsonObject o = JsonParser.parseString(r.body()).getAsJsonObject();
                            return Optional.of(
                                    new ImageInfo(
                                            o.get("Id").getAsString(),
                                            strings(o, "RepoTags"),
                                            strings(o, "RepoDigests"),
                                            o.has("Size") ? o.get("Size").getAsLong() : 0));
                        });
    }

    @Override
    public CompletableFuture<ImageInfo> pull(
            String image, Optional<RegistryCredential> credential, ProgressSink progress) {
        if (closed) {
            return CompletableFuture.failedFuture(new IllegalStateException(name() + " is closed"));
        }
        String[] nameAndTag = splitTag(image);
        String query =
                "/images/create?fromImage=" + enc(nameAndTag[0]) + "&tag=" + enc(nameAndTag[1]);
        Map<String, String> headers = new HashMap<>();
        credential.ifPresent(c -> headers.put("X-Registry-Auth", registryAuth(c)));
        Map<String, Long> totals = new HashMap<>();
        CompletableFuture<UnixHttpClient.Response> call =
                http.send(
                        HttpMethod.POST,
                        query,
                        headers,
                        line -> {
                            JsonObject m = JsonParser.parseString(line).getAsJsonObject();
                            if (m.has("errorDetail") || m.has("error")) {
                                String text =
                                        m.has("errorDetail")
                                                        && m.getAsJsonObject("errorDetail")
                                                                .has("message")
                                                ? m.getAsJsonObject("errorDetail")
                                                        .get("message")
                                                        .getAsString()
                                                : m.get("error").getAsString();
                                throw new IllegalStateException("docker: " + text);
                            }
                            onMessage(m, totals, progress);
                        });
        CompletableFuture<ImageInfo> result =
                call.thenCompose(
                                r -> {
                                    if (r.status() / 100 != 2) {
                                        throw new IllegalStateException(
                                                "docker: pulling "
                                                        + image
                                                        + " answered "
                                                        + r.status()
                                                        + " "
                                                        + r.reason()
                                                        + ": "
                                                        + errorMessage(r.body()));
                                    }
                                    return imageStatus(image);
                                })
                        .thenApply(
                                info ->
                                        info.orElseThrow(
                                                () ->
                                                        new IllegalStateException(
                                                                "docker: pull of "
                                                                        + image
                                                                        + " ended but the image is not there")));
        result.whenComplete(
                (r, e) -> {
                    if (result.isCancelled()) {
                        call.cancel(true);
                    }
                });
        return result;
    }

    private static void onMessage(JsonObject m, Map<String, Long> totals, ProgressSink progress) {
        String status = m.has("status") ? m.get("status").getAsString() : "";
        String id = m.has("id") ? m.get("id").getAsString() : "";
        if (id.isEmpty() || !LAYER_ID.matcher(id).matches()) {
            if (!status.isEmpty()) {
                progress.message(id.isEmpty() ? status : id + ": " + status);
            }
            return;
        }
        JsonObject detail =
                m.has("progressDetail") && m.get("progressDetail").isJsonObject()
                        ? m.getAsJsonObject("progressDetail")
                        : new JsonObject();
        long current = detail.has("current") ? detail.get("current").getAsLong() : -1;
        long total = detail.has("total") ? detail.get("total").getAsLong() : -1;
        Long known = totals.get(id);
        switch (status) {
            case "Downloading" -> {
                if (total > 0) {
                    totals.put(id, total);
                }
                progress.layer(
                        id,
                        status,
                        Math.max(0, current),
                        total > 0 ? total : known == null ? -1 : known);
            }
            case "Verifying Checksum", "Download complete", "Pull complete", "Extracting" -> {
                // Extracting's counters are extraction progress; download is done by then
                long t =
                        known != null
                                ? known
                                : "Extracting".equals(status) && total > 0 ? total : -1;
                if (t >= 0) {
                    totals.putIfAbsent(id, t);
                    progress.layer(id, status, t, t);
                } else {
                    progress.layer(id, status, 0, -1);
                }
            }
            case "Already exists" -> {
                totals.put(id, 0L);
                progress.layer(id, status, 0, 0);
            }
            default ->
                    progress.layer(
                            id,
                            status,
                            0,
                            known == null ? -1 : known); // Pulling fs layer, Waiting, Retrying
        }
    }

    /**
     * @param c a credential
     * @return the {@code X-Registry-Auth} value: base64url of the AuthConfig JSON
     */
    static String registryAuth(RegistryCredential c) {
        JsonObject o = new JsonObject();
        if (!c.username().isEmpty()) {
            o.addProperty("username", c.username());
        }
        if (!c.password().isEmpty()) {
            o.addProperty("password", c.password());
        }
        if (!c.identityToken().isEmpty()) {
            o.addProperty("identitytoken", c.identityToken());
        }
        o.addProperty("serveraddress", c.registry());
        return Base64.getUrlEncoder().encodeToString(o.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** Splits {@code name:tag} / {@code name@digest} the way the Docker CLI does for the API. */
    static String[] splitTag(String image) {
        int at = image.indexOf('@');
        if (at >= 0) {
            return new String[] {image.substring(0, at), image.substring(at + 1)};
        }
        int slash = image.lastIndexOf('/');
        int colon = image.lastIndexOf(':');
        if (colon > slash) {
            return new String[] {image.substring(0, colon), image.substring(colon + 1)};
        }
        return new String[] {image, "latest"};
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static String errorMessage(String body) {
        try {
            JsonElement e = JsonParser.parseString(body);
            if (e.isJsonObject() && e.getAsJsonObject().has("message")) {
                return e.getAsJsonObject().get("message").getAsString();
            }
        } catch (RuntimeException ignored) {
            // not JSON
        }
        return body.strip();
    }

    private static List<String> strings(JsonObject o, String key) {
        List<String> out = new ArrayList<>();
        if (o.has(key) && o.get(key).isJsonArray()) {
            o.getAsJsonArray(key).forEach(e -> out.add(e.getAsString()));
        }
        return out;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            http.close();
        }
    }
}

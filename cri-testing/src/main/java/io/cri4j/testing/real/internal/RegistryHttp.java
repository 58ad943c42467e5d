package io.cri4j.testing.real.internal;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

/** A minimal registry (distribution API v2) HTTP client for readiness and manifest reads. */
public final class RegistryHttp {

    /** A fetched manifest with its media type and digest from the registry's headers. */
    public record Manifest(String mediaType, String digest, long size, JsonObject json) {}

    private static final String ACCEPT =
            String.join(
                    ", ",
                    "application/vnd.oci.image.index.v1+json",
                    "application/vnd.oci.image.manifest.v1+json",
                    "application/vnd.docker.distribution.manifest.list.v2+json",
                    "application/vnd.docker.distribution.manifest.v2+json");

    private final HttpClient client;
    private final URI base;
    private final String authorization;

    /** A client for {@code http://hostPort}, with basic credentials when both are non-null. */
    public RegistryHttp(String hostPort, String username, String password) {
        this.client =
                HttpClient.newBuilder()
                        .connectTimeout(Duration.ofSeconds(2))
                        .version(HttpClient.Version.HTTP_1_1)
                        .build();
        this.base = URI.create("http://" + hostPort);
        this.authorization =
                username == null
                        ? null
                        : "Basic "
                                + Base64.getEncoder()
                                        .encodeToString(
                                                (username + ":" + password)
                                                        .getBytes(StandardCharsets.UTF_8));
    }

    /** The status of {@code GET /v2/} without credentials (200 open, 401 with auth). */
    public int ping() throws IOException, InterruptedException {
        HttpRequest request =
                HttpRequest.newBuilder(base.resolve("/v2/"))
                        .timeout(Duration.ofSeconds(2))
                        .GET()
                        .build();
        return client.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    /** Reads {@code /v2/<repository>/manifests/<reference>}. */
    public Manifest manifest(String repository, String reference)
            throws IOException, InterruptedException {
        HttpRequest.Builder request =
                HttpRequest.newBuilder(
                                base.resolve("/v2/" + repository + "/manifests/" + reference))
                        .timeout(Duration.ofSeconds(10))
                        .header("Accept", ACCEPT)
                        .GET();
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        HttpResponse<byte[]> response =
                client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
        if (response.statusCode() != 200) {
            throw new IOException(
                    "GET manifest "
                            + repository
                            + ":"
                            + reference
                            + " answered "
                            + response.statusCode()
                            + ": "
                            + new String(response.body(), StandardCharsets.UTF_8));
        }
        String digest =
                response.headers()
                        .firstValue("Docker-Content-Digest")
                        .orElseThrow(
                                () ->
                                        new IOException(
                                                "no Docker-Content-Digest for " + repository));
        String mediaType = response.headers().firstValue("Content-Type").orElse("");
        JsonObject json =
                JsonParser.parseString(new String(response.body(), StandardCharsets.UTF_8))
                        .getAsJsonObject();
        if (json.has("mediaType")) {
            mediaType = json.get("mediaType").getAsString();
        }
        return new Manifest(mediaType, digest, response.body().length, json);
    }
}

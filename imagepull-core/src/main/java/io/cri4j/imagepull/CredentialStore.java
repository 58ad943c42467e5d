package io.cri4j.imagepull;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import io.cri4j.imagepull.internal.ImageReference;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Registry credentials, read from Docker {@code config.json} files and Kubernetes
 * {@code kubernetes.io/dockerconfigjson} secrets, looked up by an image's registry host.
 *
 * <p>Entries of {@code auths} may carry {@code auth} ({@code base64(user:password)}),
 * {@code username}/{@code password}, or {@code identitytoken}. Keys may be a host
 * ({@code registry:5000}), a URL ({@code https://index.docker.io/v1/}) or a host with a path
 * prefix ({@code registry:5000/team}); a {@code *} matches one DNS label
 * ({@code *.example.com}), as in kubelet's keyring. {@link #lookup(String)} returns every
 * match, most specific first; the puller tries each in turn and then anonymously.
 *
 * <p>Errors name the file or secret and the problem, never a secret value; secrets never appear
 * in {@code toString()} or in logs. Immutable; {@link #and(CredentialStore)} combines stores.
 */
public final class CredentialStore {

    private static final CredentialStore EMPTY = new CredentialStore(List.of());

    private final List<Entry> entries;

    private record Entry(String host, String pathPrefix, RegistryCredential credential) {}

    private CredentialStore(List<Entry> entries) {
        this.entries = List.copyOf(entries);
    }

    /** @return a store without credentials (every pull anonymous) */
    public static CredentialStore empty() {
        return EMPTY;
    }

    /**
     * Reads a Docker config file ({@code ~/.docker/config.json}).
     *
     * @param file the file
     * @return its credentials
     * @throws IOException when it cannot be read
     * @throws IllegalArgumentException when it is not a valid config file
     */
    public static CredentialStore fromDockerConfig(Path file) throws IOException {
        String json;
        try {
            json = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IOException(
                    file + ": " + io.cri4j.cri.internal.IoErrors.reason(e).replace(file + ": ", ""),
                    e);
        }
        return fromDockerConfigJson(json, file.toString());
    }

    /**
     * Parses the JSON of a Docker config file or of a secret's {@code .dockerconfigjson} value.
     *
     * @param json the JSON text ({@code {"auths": {...}}})
     * @param source where it came from, for messages
     * @return its credentials
     * @throws IllegalArgumentException when it is not valid
     */
    public static CredentialStore fromDockerConfigJson(String json, String source) {
        JsonObject root;
        try {
            JsonElement e = JsonParser.parseString(json);
            if (!e.isJsonObject()) {
                throw new IllegalArgumentException(source + ": docker config is not a JSON object");
            }
            root = e.getAsJsonObject();
        } catch (JsonParseException e) {
            throw new IllegalArgumentException(
                    source
                            + ": docker config is not valid JSON: "
                            + io.cri4j.cri.internal.IoErrors.oneLine(
                                    String.valueOf(e.getMessage())),
                    e);
        }
        JsonElement auths = root.get("auths");
        if (auths == null || auths.isJsonNull()) {
            return EMPTY;
        }
        if (!auths.isJsonObject()) {
            throw new IllegalArgumentException(source + ": \"auths\" is not an object");
        }
        List<Entry> out = new ArrayList<>();
        for (Map.Entry<String, JsonElement> e : auths.getAsJsonObject().entrySet()) {
            if (!e.getValue().isJsonObject()) {
                throw new IllegalArgumentException(
                        source + ": auths entry '" + e.getKey() + "' is not an object");
            }
            out.add(parseEntry(e.getKey(), e.getValue().getAsJsonObject(), source));
        }
        return new CredentialStore(out);
    }

    /**
     * Reads a Kubernetes secret of type {@code kubernetes.io/dockerconfigjson} given as its JSON
     * object (as {@code kubectl get secret -o json} prints it: {@code data[".dockerconfigjson"]}
     * base64-encoded) or, when {@code data} is absent, {@code stringData}.
     *
     * @param secretJson the secret object
     * @return its credentials
     * @throws IllegalArgumentException when it is not such a secret
     */
    public static CredentialStore fromKubernetesSecret(String secretJson) {
        JsonObject secret;
        try {
            secret = JsonParser.parseString(secretJson).getAsJsonObject();
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("secret is not a JSON object: " + e.getMessage(), e);
        }
        String name = "secret";
        if (secret.has("metadata") && secret.get("metadata").isJsonObject()) {
            JsonObject md = secret.getAsJsonObject("metadata");
            name =
                    "secret "
                            + (md.has("namespace") ? md.get("namespace").getAsString() + "/" : "")
                            + (md.has("name") ? md.get("name").getAsString() : "?");
        }
        String type = secret.has("type") ? secret.get("type").getAsString() : "";
        if (!"kubernetes.io/dockerconfigjson".equals(type)) {
            throw new IllegalArgumentException(
                    name + " has type '" + type + "', expected kubernetes.io/dockerconfigjson");
        }
        if (secret.has("data") && secret.getAsJsonObject("data").has(".dockerconfigjson")) {
            String b64 = secret.getAsJsonObject("data").get(".dockerconfigjson").getAsString();
            byte[] raw;
            try {
                raw = Base64.getDecoder().decode(b64.strip());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        name + ": data[.dockerconfigjson] is not base64", e);
            }
            return fromDockerConfigJson(new String(raw, StandardCharsets.UTF_8), name);
        }
        if (secret.has("stringData")
                && secret.getAsJsonObject("stringData").has(".dockerconfigjson")) {
            return fromDockerConfigJson(
                    secret.getAsJsonObject("stringData").get(".dockerconfigjson").getAsString(),
                    name);
        }
        throw new IllegalArgumentException(name + " has no .dockerconfigjson key");
    }

    /**
     * Reads the {@code .dockerconfigjson} value of a secret's data map (already decoded bytes).
     *
     * @param data the secret's data
     * @param source the secret's name, for messages
     * @return its credentials
     */
    public static CredentialStore fromSecretData(Map<String, byte[]> data, String source) {
        byte[] raw = data.get(".dockerconfigjson");
        if (raw == null) {
            throw new IllegalArgumentException(source + " has no .dockerconfigjson key");
        }
        return fromDockerConfigJson(new String(raw, StandardCharsets.UTF_8), source);
    }

    private static Entry parseEntry(String key, JsonObject o, String source) {
        String user = str(o, "username");
        String password = str(o, "password");
        String auth = str(o, "auth");
        String token = str(o, "identitytoken");
        if (!auth.isEmpty()) {
            String decoded;
            try {
                decoded =
                        new String(
                                Base64.getDecoder().decode(auth.strip()), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        source + ": \"auth\" of '" + key + "' is not base64");
            }
            int colon = decoded.indexOf(':');
            if (colon < 0) {
                throw new IllegalArgumentException(
                        source
                                + ": \"auth\" of '"
                                + key
                                + "' does not decode to username:password");
            }
            user = decoded.substring(0, colon);
            password = decoded.substring(colon + 1);
        }
        String k = key.strip();
        int scheme = k.indexOf("://");
        if (scheme >= 0) {
            k = k.substring(scheme + 3);
        }
        while (k.endsWith("/")) {
            k = k.substring(0, k.length() - 1);
        }
        String host = k;
        String path = "";
        int slash = k.indexOf('/');
        if (slash >= 0) {
            host = k.substring(0, slash);
            path = k.substring(slash + 1);
            if (path.equals("v1") || path.equals("v2")) {
                path = "";
            }
        }
        host = ImageReference.canonicalRegistry(host.toLowerCase(java.util.Locale.ROOT));
        return new Entry(host, path, new RegistryCredential(host, user, password, token, source));
    }

    private static String str(JsonObject o, String name) {
        JsonElement e = o.get(name);
        return e == null || e.isJsonNull() ? "" : e.getAsString();
    }

    /**
     * @param other another store
     * @return a store with this store's credentials, then the other's
     */
    public CredentialStore and(CredentialStore other) {
        List<Entry> all = new ArrayList<>(entries);
        all.addAll(other.entries);
        return new CredentialStore(all);
    }

    /** @return number of credentials held */
    public int size() {
        return entries.size();
    }

    /**
     * The credentials for an image's registry, most specific (longest key) first.
     *
     * @param image image reference
     * @return matching credentials, possibly none
     */
    public List<RegistryCredential> lookup(String image) {
        ImageReference ref = ImageReference.parse(image);
        List<Entry> matches = new ArrayList<>();
        for (Entry e : entries) {
            if (hostMatches(e.host, ref.registry())
                    && (e.pathPrefix.isEmpty()
                            || ref.repository().equals(e.pathPrefix)
                            || ref.repository().startsWith(e.pathPrefix + "/"))) {
                matches.add(e);
            }
        }
        matches.sort(
                Comparator.comparingInt((Entry e) -> e.host.length() + e.pathPrefix.length())
                        .reversed());
        return matches.stream().map(Entry::credential).toList();
    }

    private static boolean hostMatches(String pattern, String host) {
        if (!pattern.contains("*")) {
            return pattern.equals(host);
        }
        String[] p = pattern.split("\\.", -1);
        String[] h = host.split("\\.", -1);
        if (p.length != h.length) {
            return false;
        }
        for (int i = 0; i < p.length; i++) {
            String regex = java.util.regex.Pattern.quote(p[i]).replace("*", "\\E[^.]*\\Q");
            if (!h[i].matches(regex)) {
                return false;
            }
        }
        return true;
    }

    /** @return the registries held, without secrets */
    @Override
    public String toString() {
        return "CredentialStore"
                + entries.stream()
                        .map(e -> e.host + (e.pathPrefix.isEmpty() ? "" : "/" + e.pathPrefix))
                        .toList();
    }
}

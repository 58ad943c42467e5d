package io.cri4j.imagepull;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Objects;

/**
 * A credential for one registry, as found in Docker's {@code config.json} {@code auths} entries.
 * {@link #toString()} never shows the secret parts.
 *
 * @param registry registry host (and port) the credential is for, e.g. {@code registry.example:5000}
 * @param username user name, may be empty
 * @param password password, may be empty
 * @param identityToken OAuth identity (refresh) token, may be empty
 * @param source where it was read from (a file path or secret name), for messages
 */
public record RegistryCredential(
        String registry, String username, String password, String identityToken, String source) {

    /** Validates. */
    public RegistryCredential {
        Objects.requireNonNull(registry, "registry");
        username = username == null ? "" : username;
        password = password == null ? "" : password;
        identityToken = identityToken == null ? "" : identityToken;
        source = source == null ? "" : source;
    }

    /**
     * @param registry registry host
     * @param username user
     * @param password password
     * @return a user/password credential
     */
    public static RegistryCredential basic(String registry, String username, String password) {
        return new RegistryCredential(registry, username, password, "", "");
    }

    /** @return {@code base64(username:password)}, the {@code auth} form of config.json */
    public String basicAuth() {
        return Base64.getEncoder()
                .encodeToString((username + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    /** @return a description without secrets */
    @Override
    public String toString() {
        return "RegistryCredential[registry="
                + registry
                + ", username="
                + username
                + (password.isEmpty() ? "" : ", password=***")
                + (identityToken.isEmpty() ? "" : ", identityToken=***")
                + (source.isEmpty() ? "" : ", source=" + source)
                + "]";
    }
}

package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Docker config.json and Kubernetes dockerconfigjson secrets: parsing, matching, order, secrecy. */
class CredentialStoreTest {

    @TempDir Path dir;

    private static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void readsAllThreeEntryFormsFromConfigJson() throws Exception {
        Path config = dir.resolve("config.json");
        Files.writeString(
                config,
                "{\"auths\": {"
                        + "\"https://index.docker.io/v1/\": {\"auth\": \""
                        + b64("hubuser:hub:pass")
                        + "\"},"
                        + "\"registry.example:5000\": {\"username\": \"alice\", \"password\": \"s3cret\"},"
                        + "\"http://tokens.example/v2/\": {\"identitytoken\": \"tok-123\"}"
                        + "}, \"credsStore\": \"desktop\"}");
        CredentialStore store = CredentialStore.fromDockerConfig(config);
        assertThat(store.size()).isEqualTo(3);

        RegistryCredential hub = store.lookup("busybox").get(0);
        assertThat(hub.registry()).isEqualTo("docker.io");
        assertThat(hub.username()).isEqualTo("hubuser");
        assertThat(hub.password()).as("password may contain ':'").isEqualTo("hub:pass");
        assertThat(hub.source()).isEqualTo(config.toString());
        assertThat(store.lookup("docker.io/library/nginx:1")).hasSize(1);

        assertThat(store.lookup("registry.example:5000/team/app:1.0"))
                .singleElement()
                .satisfies(
                        c -> {
                            assertThat(c.username()).isEqualTo("alice");
                            assertThat(c.password()).isEqualTo("s3cret");
                            assertThat(c.basicAuth()).isEqualTo(b64("alice:s3cret"));
                        });
        assertThat(store.lookup("tokens.example/x@sha256:abcd"))
                .singleElement()
                .extracting(RegistryCredential::identityToken)
                .isEqualTo("tok-123");
        assertThat(store.lookup("registry.example/app")).as("port is part of the host").isEmpty();
        assertThat(store.lookup("other.example/app")).isEmpty();
    }

    @Test
    void matchesWildcardsAndPathPrefixesMostSpecificFirst() {
        CredentialStore store =
                CredentialStore.fromDockerConfigJson(
                        "{\"auths\": {"
                                + "\"*.corp.example\": {\"username\": \"wild\", \"password\": \"w\"},"
                                + "\"reg.corp.example\": {\"username\": \"host\", \"password\": \"h\"},"
                                + "\"reg.corp.example/team\": {\"username\": \"team\", \"password\": \"t\"}"
                                + "}}",
                        "test");
        assertThat(store.lookup("reg.corp.example/team/app:1"))
                .extracting(RegistryCredential::username)
                .containsExactly("team", "host", "wild");
        assertThat(store.lookup("reg.corp.example/other/app:1"))
                .extracting(RegistryCredential::username)
                .containsExactly("host", "wild");
        assertThat(store.lookup("x.corp.example/app"))
                .extracting(RegistryCredential::username)
                .containsExactly("wild");
        assertThat(store.lookup("a.b.corp.example/app")).as("* is one label").isEmpty();
    }

    @Test
    void readsKubernetesDockerConfigJsonSecrets() {
        String cfg =
                "{\"auths\":{\"registry.example:5000\":{\"username\":\"bob\",\"password\":\"pw\"}}}";
        String secret =
                "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"kubernetes.io/dockerconfigjson\","
                        + "\"metadata\":{\"name\":\"regcred\",\"namespace\":\"kube-system\"},"
                        + "\"data\":{\".dockerconfigjson\":\""
                        + b64(cfg)
                        + "\"}}";
        CredentialStore store = CredentialStore.fromKubernetesSecret(secret);
        assertThat(store.lookup("registry.example:5000/a"))
                .singleElement()
                .satisfies(
                        c -> {
                            assertThat(c.username()).isEqualTo("bob");
                            assertThat(c.source()).isEqualTo("secret kube-system/regcred");
                        });
        assertThat(
                        CredentialStore.fromSecretData(
                                        Map.of(
                                                ".dockerconfigjson",
                                                cfg.getBytes(StandardCharsets.UTF_8)),
                                        "secret default/x")
                                .lookup("registry.example:5000/a"))
                .hasSize(1);
        assertThatThrownBy(
                        () ->
                                CredentialStore.fromKubernetesSecret(
                                        "{\"type\":\"Opaque\",\"metadata\":{\"name\":\"x\"},\"data\":{}}"))
                .hasMessage("secret x has type 'Opaque', expected kubernetes.io/dockerconfigjson");
    }

    @Test
    void badFilesGiveClearErrorsWithoutSecrets() {
        assertThatThrownBy(
                        () ->
                                CredentialStore.fromDockerConfigJson(
                                        "{\"auths\": [", "/etc/cfg.json"))
                .hasMessageStartingWith("/etc/cfg.json: docker config is not valid JSON");
        assertThatThrownBy(
                        () ->
                                CredentialStore.fromDockerConfigJson(
                                        "{\"auths\": {\"r.example\": {\"auth\": \""
                                                + b64("nocolonsecret")
                                                + "\"}}}",
                                        "cfg"))
                .hasMessage("cfg: \"auth\" of 'r.example' does not decode to username:password")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("nocolonsecret"));
    }

    @Test
    void credentialsAreTriedInTurnThenAnonymouslyAndNeverLogged() throws Exception {
        String password1 = "pw-first-XYZZY";
        String password2 = "pw-second-PLUGH";
        String token = "idtoken-FROBOZZ";
        CredentialStore store =
                CredentialStore.fromDockerConfigJson(
                        "{\"auths\": {"
                                + "\"registry.example:5000\": {\"auth\": \""
                                + b64("u1:" + password1)
                                + "\"},"
                                + "\"registry.example:5000/team\": {\"username\": \"u2\", \"password\": \""
                                + password2
                                + "\","
                                + "  \"identitytoken\": \""
                                + token
                                + "\"}"
                                + "}}",
                        "cfg");
        PrintStream savedErr = System.err;
        PrintStream savedOut = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream capture = new PrintStream(captured, true, StandardCharsets.UTF_8);
        FakeBackend backend = new FakeBackend();
        VirtualScheduler time = new VirtualScheduler();
        System.setErr(capture);
        System.setOut(capture);
        try (ImagePuller puller =
                ImagePuller.builder(backend)
                        .scheduler(time)
                        .credentials(store)
                        .defaultPolicy(PullPolicy.defaults().withBackoffLimit(1))
                        .build()) {
            PullJob job = puller.pull("registry.example:5000/team/app:1");
            FakeBackend.Call c1 = backend.next();
            assertThat(c1.credential().map(RegistryCredential::username)).contains("u2");
            c1.fail("unauthorized: authentication required");
            FakeBackend.Call c2 = backend.next();
            assertThat(c2.credential().map(RegistryCredential::username)).contains("u1");
            c2.fail("unauthorized: authentication required");
            FakeBackend.Call c3 = backend.next();
            assertThat(c3.credential()).as("anonymous last").isEqualTo(Optional.empty());
            c3.fail("unauthorized: authentication required");
            time.awaitPending(java.time.Duration.ofSeconds(1));
            time.advance(java.time.Duration.ofSeconds(1));
            for (int i = 0; i < 3; i++) {
                backend.next().fail("denied");
            }
            try {
                job.result().get(5, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                assertThat(e.getCause())
                        .hasMessageContaining(
                                "with credential for registry.example:5000 (user u2) from cfg")
                        .hasMessageContaining("registry.example:5000/team/app:1");
                System.err.println("failure: " + e.getCause());
            }
            System.err.println(
                    "store: "
                            + store
                            + " creds: "
                            + store.lookup("registry.example:5000/team/app"));
        } finally {
            System.setErr(savedErr);
            System.setOut(savedOut);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertThat(log)
                .as("something was logged")
                .contains("failed after 2 attempts")
                .contains("u2");
        assertThat(log)
                .doesNotContain(password1)
                .doesNotContain(password2)
                .doesNotContain(token)
                .doesNotContain(b64("u1:" + password1));
        savedErr.print(log);
    }

    @Test
    void toStringHidesSecrets() {
        RegistryCredential c = new RegistryCredential("r", "user", "hunter2", "tok", "src");
        assertThat(c.toString())
                .contains("user")
                .doesNotContain("hunter2")
                .doesNotContain("tok,")
                .contains("***");
        assertThat(List.of(c).toString()).doesNotContain("hunter2");
    }
}

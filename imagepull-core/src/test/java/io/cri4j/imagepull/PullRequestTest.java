package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Image references follow distribution/reference's grammar, checked before any pull. */
class PullRequestTest {

    @Test
    void wellFormedReferencesAreTaken() {
        String digest = "sha256:" + "a".repeat(64);
        for (String ok :
                new String[] {
                    "busybox",
                    "busybox:1.36",
                    "library/busybox",
                    "docker.io/library/busybox:latest",
                    "registry.example:5000/team/app:1.2",
                    "localhost/app",
                    "localhost:5000/app",
                    "127.0.0.1:5000/cri4j/busybox:1",
                    "Registry.Example.COM/app",
                    "[::1]:5000/app:v1",
                    "a__b/c.d/e--f_g",
                    "app:" + "t".repeat(128),
                    "app@" + digest,
                    "registry:5000/app:1@" + digest,
                    "gcr.io/k8s-staging/pause:3.9"
                }) {
            assertThat(PullRequest.of(ok).image()).isEqualTo(ok);
        }
    }

    @Test
    void malformedReferencesAreRefusedNamingTheReason() {
        String[][] bad = {
            {"::::", "invalid reference format"},
            {"../../etc/passwd", "invalid reference format"},
            {"Busybox", "repository name must be lowercase"},
            {"docker.io/Library/busybox", "repository name must be lowercase"},
            {"registry:5000/", "invalid reference format"},
            {"a//b", "invalid reference format"},
            {"-a", "invalid reference format"},
            {"a:", "invalid reference format"},
            {"a:" + "t".repeat(129), "invalid reference format"},
            {"app@sha256:abc", "invalid reference format"},
            {"a" + "/b".repeat(200), "must not be more than 255 characters"},
            {"a".repeat(64).replace('a', 'f'), "cannot specify 64-byte hexadecimal strings"},
            {"app:1 2", "whitespace"},
            {"", "empty"},
        };
        for (String[] b : bad) {
            assertThatThrownBy(() -> PullRequest.of(b[0]))
                    .as(b[0])
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(b[1]);
        }
    }
}

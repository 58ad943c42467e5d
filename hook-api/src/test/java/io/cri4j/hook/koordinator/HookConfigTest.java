package io.cri4j.hook.koordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.FailurePolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class HookConfigTest {

    @Test
    void parsesKoordinatorsFormatWithDefaults() {
        HookConfig c =
                HookConfig.parse(
                        "koordlet",
                        """
        {"remote-endpoint": "/var/run/koordlet/koordlet.sock",
         "failure-policy": "Fail",
         "runtime-hooks": ["PreRunPodSandbox", "PreCreateContainer", "PostStopContainer"]}
        """);
        assertThat(c.name()).isEqualTo("koordlet");
        assertThat(c.remoteEndpoint()).isEqualTo("/var/run/koordlet/koordlet.sock");
        assertThat(c.failurePolicy()).isEqualTo(FailurePolicy.FAIL);
        assertThat(c.points())
                .containsExactlyInAnyOrder(
                        HookPoint.PRE_RUN_POD_SANDBOX,
                        HookPoint.PRE_CREATE_CONTAINER,
                        HookPoint.POST_STOP_CONTAINER);
        assertThat(c.index()).isZero();
        assertThat(c.timeout()).isEqualTo(Duration.ofSeconds(2));
    }

    @Test
    void parsesOurIndexTimeoutAndUnixScheme() {
        HookConfig c =
                HookConfig.parse(
                        "x",
                        """
        {"remote-endpoint": "unix:///run/x.sock", "runtime-hooks": ["PreRemoveContainer"],
         "index": 5, "timeout": "250ms"}
        """);
        assertThat(c.remoteEndpoint()).isEqualTo("/run/x.sock");
        assertThat(c.failurePolicy()).isEqualTo(FailurePolicy.IGNORE);
        assertThat(c.index()).isEqualTo(5);
        assertThat(c.timeout()).isEqualTo(Duration.ofMillis(250));
    }

    @Test
    void rejectsBadFilesNamingTheProblem() {
        assertThatThrownBy(() -> HookConfig.parse("x", "{not json"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("malformed JSON");
        assertThatThrownBy(
                        () -> HookConfig.parse("x", "{\"runtime-hooks\":[\"PreRunPodSandbox\"]}"))
                .hasMessageContaining("remote-endpoint");
        assertThatThrownBy(
                        () ->
                                HookConfig.parse(
                                        "x",
                                        "{\"remote-endpoint\":\"/a\",\"runtime-hooks\":[\"PreTeaTime\"]}"))
                .hasMessageContaining("unknown runtime hook \"PreTeaTime\"");
        assertThatThrownBy(
                        () ->
                                HookConfig.parse(
                                        "x",
                                        "{\"remote-endpoint\":\"/a\",\"runtime-hooks\":[\"PreRunPodSandbox\"],"
                                                + "\"failure-policy\":\"Sometimes\"}"))
                .hasMessageContaining("failure-policy");
        assertThatThrownBy(
                        () ->
                                HookConfig.parse(
                                        "x",
                                        "{\"remote-endpoint\":\"/a\",\"runtime-hooks\":[\"PreRunPodSandbox\"],\"timeout\":\"2h\"}"))
                .hasMessageContaining("timeout");
        assertThatThrownBy(
                        () ->
                                HookConfig.parse(
                                        "x",
                                        "{\"remote-endpoint\":\"relative.sock\",\"runtime-hooks\":[\"PreRunPodSandbox\"]}"))
                .hasMessageContaining("absolute");
        assertThatThrownBy(() -> HookConfig.parse("x", "{\"remote-endpoint\":\"/a\"}"))
                .hasMessageContaining("runtime-hooks");
    }

    private static String withField(String field) {
        return "{\"remote-endpoint\":\"/a\",\"runtime-hooks\":[\"PreRunPodSandbox\"],"
                + field
                + "}";
    }

    @Test
    void everyValueIsRangeChecked() {
        for (String t :
                new String[] {
                    "9223372036854775807s",
                    "999999999999999999m",
                    "3601s",
                    "61m",
                    "3600001ms",
                    "2h",
                    "0s",
                    "-1s",
                    "1.5s",
                    "99999999999999999999999999ms"
                }) {
            assertThatThrownBy(() -> HookConfig.parse("x", withField("\"timeout\":\"" + t + "\"")))
                    .as(t)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("\"timeout\"")
                    .hasMessageContaining(t);
        }
        assertThat(HookConfig.parse("x", withField("\"timeout\":\"3600s\"")).timeout())
                .isEqualTo(Duration.ofHours(1));
        assertThat(HookConfig.parse("x", withField("\"timeout\":\"1h\"")).timeout())
                .isEqualTo(Duration.ofHours(1));
        assertThat(HookConfig.parse("x", withField("\"timeout\":\"60m\"")).timeout())
                .isEqualTo(Duration.ofHours(1));
        for (String i :
                new String[] {
                    "4294967297", "2147483648", "-2147483649", "1.5", "1e10", "\"ten\"", "-1", "100"
                }) {
            assertThatThrownBy(() -> HookConfig.parse("x", withField("\"index\":" + i)))
                    .as(i)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("\"index\"")
                    .hasMessageContaining("0 to 99");
        }
        assertThat(HookConfig.parse("x", withField("\"index\":99")).index()).isEqualTo(99);
        assertThatThrownBy(
                        () ->
                                HookConfig.parse(
                                        "x",
                                        "{\"remote-endpoint\":\"/"
                                                + "s".repeat(200)
                                                + "\",\"runtime-hooks\":[\"PreRunPodSandbox\"]}"))
                .hasMessageContaining("\"remote-endpoint\"")
                .hasMessageContaining("107");
        assertThatThrownBy(
                        () ->
                                new HookConfig(
                                        "x",
                                        "/a",
                                        FailurePolicy.IGNORE,
                                        java.util.Set.of(HookPoint.PRE_RUN_POD_SANDBOX),
                                        0,
                                        Duration.ofDays(3)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("timeout");
    }

    @Test
    void gsonsTroubleshootingLinkIsNotPartOfTheMessage() {
        assertThatThrownBy(() -> HookConfig.parse("x", "{\"remote-endpoint\": }"))
                .hasMessageContaining("malformed JSON")
                .hasMessageNotContaining("http");
    }
}

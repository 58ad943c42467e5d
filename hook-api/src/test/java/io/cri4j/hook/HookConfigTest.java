package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class HookConfigTest {

  @Test
  void parsesKoordinatorsFormatWithDefaults() {
    HookConfig c = HookConfig.parse("koordlet", """
        {"remote-endpoint": "/var/run/koordlet/koordlet.sock",
         "failure-policy": "Fail",
         "runtime-hooks": ["PreRunPodSandbox", "PreCreateContainer", "PostStopContainer"]}
        """);
    assertThat(c.name()).isEqualTo("koordlet");
    assertThat(c.remoteEndpoint()).isEqualTo("/var/run/koordlet/koordlet.sock");
    assertThat(c.failurePolicy()).isEqualTo(FailurePolicy.FAIL);
    assertThat(c.points()).containsExactlyInAnyOrder(HookPoint.PRE_RUN_POD_SANDBOX,
        HookPoint.PRE_CREATE_CONTAINER, HookPoint.POST_STOP_CONTAINER);
    assertThat(c.index()).isZero();
    assertThat(c.timeout()).isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void parsesOurIndexTimeoutAndUnixScheme() {
    HookConfig c = HookConfig.parse("x", """
        {"remote-endpoint": "unix:///run/x.sock", "runtime-hooks": ["PreRemoveContainer"],
         "index": -5, "timeout": "250ms"}
        """);
    assertThat(c.remoteEndpoint()).isEqualTo("/run/x.sock");
    assertThat(c.failurePolicy()).isEqualTo(FailurePolicy.IGNORE);
    assertThat(c.index()).isEqualTo(-5);
    assertThat(c.timeout()).isEqualTo(Duration.ofMillis(250));
  }

  @Test
  void rejectsBadFilesNamingTheProblem() {
    assertThatThrownBy(() -> HookConfig.parse("x", "{not json"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("malformed JSON");
    assertThatThrownBy(() -> HookConfig.parse("x", "{\"runtime-hooks\":[\"PreRunPodSandbox\"]}"))
        .hasMessageContaining("remote-endpoint");
    assertThatThrownBy(() -> HookConfig.parse("x",
        "{\"remote-endpoint\":\"/a\",\"runtime-hooks\":[\"PreTeaTime\"]}"))
        .hasMessageContaining("unknown runtime hook \"PreTeaTime\"");
    assertThatThrownBy(() -> HookConfig.parse("x",
        "{\"remote-endpoint\":\"/a\",\"runtime-hooks\":[\"PreRunPodSandbox\"],"
            + "\"failure-policy\":\"Sometimes\"}"))
        .hasMessageContaining("failure-policy");
    assertThatThrownBy(() -> HookConfig.parse("x",
        "{\"remote-endpoint\":\"/a\",\"runtime-hooks\":[\"PreRunPodSandbox\"],\"timeout\":\"2h\"}"))
        .hasMessageContaining("timeout");
    assertThatThrownBy(() -> HookConfig.parse("x",
        "{\"remote-endpoint\":\"relative.sock\",\"runtime-hooks\":[\"PreRunPodSandbox\"]}"))
        .hasMessageContaining("absolute");
    assertThatThrownBy(() -> HookConfig.parse("x", "{\"remote-endpoint\":\"/a\"}"))
        .hasMessageContaining("runtime-hooks");
  }
}

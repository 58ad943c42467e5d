package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CritestNriTest {

    private static final String DROPPED =
            "second NRI test stub failed to become ready\n"
                    + "Unexpected error:\n"
                    + "    <*fmt.wrapError | 0x3674d43cba0>: \n"
                    + "    NRI stub exited early: ttrpc: server closed\n"
                    + "    {\n"
                    + "        msg: \"NRI stub exited early: ttrpc: server closed\",\n"
                    + "        err: <*errors.errorString | 0x20a7940>{\n"
                    + "            s: \"ttrpc: server closed\",\n"
                    + "        },\n"
                    + "    }\n"
                    + "occurred";

    @Test
    void aRaceSpecWhosePluginWasDroppedAtTheBoundIsThatRaceAndNothingElseIs() {
        String race = CritestNri.SYNCHRONIZE_RACE.get(0);
        assertThat(CritestNri.droppedAtSynchronizeBound(spec(race, DROPPED))).isTrue();
        assertThat(
                        CritestNri.droppedAtSynchronizeBound(
                                spec("[k8s.io] NRI plugin registration should work", DROPPED)))
                .as("another spec failing the same way")
                .isFalse();
        assertThat(
                        CritestNri.droppedAtSynchronizeBound(
                                spec(race, "second NRI test stub failed to become ready: timeout")))
                .as("the plugin not dropped by the host")
                .isFalse();
        assertThat(
                        CritestNri.droppedAtSynchronizeBound(
                                spec(race, "expected container c1 in Synchronize")))
                .isFalse();
    }

    private static CritestReport.Spec spec(String name, String failure) {
        return new CritestReport.Spec(name, "failed", failure, 2517);
    }
}

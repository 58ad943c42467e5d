package io.cri4j.streaming.internal.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CloseActionsTest {

    @Test
    void runsRegisteredActionsOnceAndLateOnesAtOnce() {
        CloseActions c = new CloseActions();
        List<String> ran = new ArrayList<>();
        c.add(() -> ran.add("early"));
        assertThat(c.isClosed()).isFalse();
        assertThat(ran).isEmpty();
        c.close();
        c.close();
        assertThat(c.isClosed()).isTrue();
        assertThat(ran).containsExactly("early");
        c.add(() -> ran.add("late"));
        assertThat(ran).containsExactly("early", "late");
    }

    @Test
    void aFailingActionDoesNotStopTheOthers() {
        CloseActions c = new CloseActions();
        List<String> ran = new ArrayList<>();
        c.add(
                () -> {
                    throw new IllegalStateException("boom");
                });
        c.add(() -> ran.add("second"));
        c.close();
        assertThat(ran).containsExactly("second");
    }
}

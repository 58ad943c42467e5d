package io.cri4j.testing.fake.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The CRI log format containerd writes and kubelet reads, and reopening after rotation. */
class CriLogFileTest {

    @TempDir Path dir;

    final Clock clock =
            Clock.fixed(Instant.parse("2026-11-27T10:41:16.123456789Z"), ZoneOffset.UTC);

    @Test
    void linesAreTaggedFullAndLongLinesArePartial() throws Exception {
        Path log = dir.resolve("pod/c/0.log");
        try (CriLogFile f = new CriLogFile(log, clock)) {
            byte[] out = "hello\nwor".getBytes(StandardCharsets.UTF_8);
            f.write(false, out, 0, out.length);
            byte[] more = "ld\n".getBytes(StandardCharsets.UTF_8);
            f.write(false, more, 0, more.length);
            byte[] err = "oops".getBytes(StandardCharsets.UTF_8);
            f.write(true, err, 0, err.length);
            f.endOf(true);
            byte[] longLine =
                    ("x".repeat(CriLogFile.MAX_LINE + 3) + "\n").getBytes(StandardCharsets.UTF_8);
            f.write(false, longLine, 0, longLine.length);
        }
        List<String> lines = Files.readAllLines(log);
        assertThat(lines).hasSize(5);
        assertThat(lines.get(0)).isEqualTo("2026-11-27T10:41:16.123456789Z stdout F hello");
        assertThat(lines.get(1)).isEqualTo("2026-11-27T10:41:16.123456789Z stdout F world");
        assertThat(lines.get(2)).isEqualTo("2026-11-27T10:41:16.123456789Z stderr F oops");
        assertThat(lines.get(3))
                .startsWith("2026-11-27T10:41:16.123456789Z stdout P xxx")
                .hasSize("2026-11-27T10:41:16.123456789Z stdout P ".length() + CriLogFile.MAX_LINE);
        assertThat(lines.get(4)).isEqualTo("2026-11-27T10:41:16.123456789Z stdout F xxx");
    }

    @Test
    void reopenStartsANewFileAtThePathAfterItWasRenamed() throws Exception {
        Path log = dir.resolve("0.log");
        try (CriLogFile f = new CriLogFile(log, clock)) {
            byte[] a = "before\n".getBytes(StandardCharsets.UTF_8);
            f.write(false, a, 0, a.length);
            Files.move(log, dir.resolve("0.log.1"));
            f.reopen();
            assertThat(log).exists();
            byte[] b = "after\n".getBytes(StandardCharsets.UTF_8);
            f.write(false, b, 0, b.length);
        }
        assertThat(Files.readAllLines(dir.resolve("0.log.1")))
                .singleElement()
                .asString()
                .endsWith(" stdout F before");
        assertThat(Files.readAllLines(log)).singleElement().asString().endsWith(" stdout F after");
    }
}

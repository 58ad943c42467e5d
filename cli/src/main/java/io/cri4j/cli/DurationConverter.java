package io.cri4j.cli;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Locale;
import picocli.CommandLine;

/**
 * Duration options: {@code 500ms}, {@code 90s}, {@code 1.5m}, {@code 2h}, or plain seconds;
 * positive and at most {@link #MAX} (no option of ours means more, and nothing overflows).
 */
final class DurationConverter implements CommandLine.ITypeConverter<Duration> {

    /** The longest duration an option takes. */
    static final Duration MAX = Duration.ofHours(24);

    @Override
    public Duration convert(String v) {
        String s = v.strip().toLowerCase(Locale.ROOT);
        long unitMillis;
        if (s.endsWith("ms")) {
            unitMillis = 1;
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("s")) {
            unitMillis = 1000;
            s = s.substring(0, s.length() - 1);
        } else if (s.endsWith("m")) {
            unitMillis = 60_000;
            s = s.substring(0, s.length() - 1);
        } else if (s.endsWith("h")) {
            unitMillis = 3_600_000;
            s = s.substring(0, s.length() - 1);
        } else {
            unitMillis = 1000;
        }
        BigDecimal millis;
        try {
            if (s.length() > 40 || s.contains("e")) {
                throw new NumberFormatException();
            }
            millis = new BigDecimal(s).multiply(BigDecimal.valueOf(unitMillis));
        } catch (NumberFormatException e) {
            throw new CommandLine.TypeConversionException(
                    "'" + v + "' is not a duration (e.g. 90s, 10m, 1h)");
        }
        if (millis.signum() <= 0 || millis.compareTo(BigDecimal.valueOf(MAX.toMillis())) > 0) {
            throw new CommandLine.TypeConversionException(
                    "duration '" + v + "' must be positive and at most 24h");
        }
        return Duration.ofMillis(Math.max(1, millis.longValue()));
    }
}

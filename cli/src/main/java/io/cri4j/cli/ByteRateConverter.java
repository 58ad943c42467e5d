package io.cri4j.cli;

import java.util.Locale;
import picocli.CommandLine;

/** A byte count per second: {@code 32MiB}, {@code 500KiB}, {@code 1GiB}, {@code 1048576} or {@code 0}. */
final class ByteRateConverter implements CommandLine.ITypeConverter<Long> {

    @Override
    public Long convert(String value) {
        String v = value.strip().toLowerCase(Locale.ROOT);
        if (v.endsWith("/s")) {
            v = v.substring(0, v.length() - 2);
        }
        long unit = 1;
        for (String[] u :
                new String[][] {
                    {"gib", "1073741824"}, {"mib", "1048576"}, {"kib", "1024"}, {"b", "1"}
                }) {
            if (v.endsWith(u[0])) {
                unit = Long.parseLong(u[1]);
                v = v.substring(0, v.length() - u[0].length()).strip();
                break;
            }
        }
        try {
            double n = Double.parseDouble(v);
            if (n < 0 || Double.isNaN(n) || Double.isInfinite(n)) {
                throw new NumberFormatException();
            }
            return Math.round(n * unit);
        } catch (NumberFormatException e) {
            throw new CommandLine.TypeConversionException(
                    "'" + value + "' is not a byte rate (e.g. 32MiB, 500KiB, 0)");
        }
    }
}

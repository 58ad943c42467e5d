package io.cri4j.testing.fake;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The outcome of an {@code ExecSync} command.
 *
 * @param exitCode the command's exit code
 * @param stdout   captured standard output
 * @param stderr   captured standard error
 */
public record ExecResult(int exitCode, byte[] stdout, byte[] stderr) {

    /** Copies the arrays so the value is immutable. */
    public ExecResult {
        stdout = stdout.clone();
        stderr = stderr.clone();
    }

    /** A result with UTF-8 text output. */
    public static ExecResult of(int exitCode, String stdout, String stderr) {
        return new ExecResult(
                exitCode,
                stdout.getBytes(StandardCharsets.UTF_8),
                stderr.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public byte[] stdout() {
        return stdout.clone();
    }

    @Override
    public byte[] stderr() {
        return stderr.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ExecResult r
                && r.exitCode == exitCode
                && Arrays.equals(r.stdout, stdout)
                && Arrays.equals(r.stderr, stderr);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * exitCode + Arrays.hashCode(stdout)) + Arrays.hashCode(stderr);
    }

    @Override
    public String toString() {
        return "ExecResult[exitCode="
                + exitCode
                + ", stdout="
                + stdout.length
                + " bytes, stderr="
                + stderr.length
                + " bytes]";
    }
}

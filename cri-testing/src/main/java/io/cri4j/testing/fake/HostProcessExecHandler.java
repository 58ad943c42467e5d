package io.cri4j.testing.fake;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Runs ExecSync commands as host processes; output goes to temp files so no reader threads are needed. */
final class HostProcessExecHandler implements ExecHandler {

    /** containerd caps ExecSync output; we keep each stream below the 16 MiB gRPC message limit together. */
    static final int MAX_OUTPUT_BYTES = 7 * 1024 * 1024;

    @Override
    public ExecResult execSync(ExecContext context) throws Exception {
        Path out = Files.createTempFile("cri4j-fake-exec", ".out");
        Path err = Files.createTempFile("cri4j-fake-exec", ".err");
        try {
            ProcessBuilder pb =
                    new ProcessBuilder(context.command())
                            .redirectOutput(out.toFile())
                            .redirectError(err.toFile())
                            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            pb.environment().putAll(context.env());
            if (!context.workingDir().isEmpty()
                    && Files.isDirectory(Path.of(context.workingDir()))) {
                pb.directory(new File(context.workingDir()));
            }
            Process process;
            try {
                process = pb.start();
            } catch (IOException e) {
                throw new IOException(
                        "OCI runtime exec failed: exec failed: unable to start container process: exec: \""
                                + context.command().get(0)
                                + "\": "
                                + e.getMessage(),
                        e);
            }
            boolean done;
            try {
                if (context.timeout().isZero()) {
                    process.waitFor();
                    done = true;
                } else {
                    done = process.waitFor(context.timeout().toMillis(), TimeUnit.MILLISECONDS);
                }
            } catch (InterruptedException e) {
                kill(process);
                throw e;
            }
            if (!done) {
                kill(process);
                throw new TimeoutException(
                        "timeout " + context.timeout().toSeconds() + "s exceeded");
            }
            return new ExecResult(process.exitValue(), read(out), read(err));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    private static void kill(Process process) throws InterruptedException {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        process.waitFor(5, TimeUnit.SECONDS);
    }

    private static byte[] read(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            return in.readNBytes(MAX_OUTPUT_BYTES);
        }
    }
}

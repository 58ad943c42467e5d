package io.cri4j.streaming.testing;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs a real kubectl binary against a {@link KubeFront}. A missing binary skips the test with
 * the reason, except when the environment variable CI is "true": then it fails.
 */
public final class Kubectl {
    public static final Path DIR = Path.of("/usr/lib/google-cloud-sdk/bin");
    private final Path binary;
    private final Path home;
    private final Path kubeconfig;

    private Kubectl(Path binary, Path home, Path kubeconfig) {
        this.binary = binary;
        this.home = home;
        this.kubeconfig = kubeconfig;
    }

    /** kubectl.{version} from the machine image, e.g. "1.27". */
    public static Kubectl version(String version, String serverUrl, Path tmp) throws IOException {
        return of(DIR.resolve("kubectl." + version), serverUrl, tmp);
    }

    /** A kubectl at an explicit path (skips/fails like {@link #version} when absent). */
    public static Kubectl of(Path binary, String serverUrl, Path tmp) throws IOException {
        requireBinary(binary, "kubectl");
        Path home = Files.createDirectories(tmp.resolve("home"));
        Path cfg = tmp.resolve("kubeconfig");
        Files.writeString(
                cfg,
                String.join(
                        "\n",
                        "apiVersion: v1",
                        "kind: Config",
                        "clusters:",
                        "- name: front",
                        "  cluster:",
                        "    server: " + serverUrl,
                        "contexts:",
                        "- name: front",
                        "  context:",
                        "    cluster: front",
                        "    user: tester",
                        "    namespace: default",
                        "current-context: front",
                        "users:",
                        "- name: tester",
                        "  user: {}",
                        ""));
        return new Kubectl(binary, home, cfg);
    }

    public static void requireBinary(Path binary, String origin) {
        if (!Files.isExecutable(binary)) {
            String why = binary + " is not installed (" + origin + ")";
            if ("true".equals(System.getenv("CI"))) {
                fail(why + "; CI=true requires it");
            }
            Assumptions.abort(why);
        }
    }

    /** Result of a finished kubectl. */
    public record Result(int exitCode, byte[] stdout, String stderr) {
        public String out() {
            return new String(stdout, StandardCharsets.UTF_8);
        }
    }

    public ProcessBuilder builder(List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(binary.toString());
        cmd.add("--kubeconfig=" + kubeconfig);
        cmd.add("--cache-dir=" + home.resolve("cache"));
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put("HOME", home.toString());
        pb.environment().remove("KUBECONFIG");
        return pb;
    }

    /** Runs kubectl with {@code stdin} fed and closed; fails the test after {@code timeoutSec}. */
    public Result run(byte[] stdin, long timeoutSec, String... args) throws Exception {
        Process p = builder(List.of(args)).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Thread to = drain(p.getInputStream(), out);
        Thread te = drain(p.getErrorStream(), err);
        try (OutputStream in = p.getOutputStream()) {
            if (stdin != null) {
                in.write(stdin);
            }
        } catch (IOException e) {
            // kubectl may exit before reading stdin
        }
        if (!p.waitFor(timeoutSec, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            to.join(5000);
            te.join(5000);
            fail(
                    "kubectl "
                            + String.join(" ", args)
                            + " did not finish in "
                            + timeoutSec
                            + " s; stderr: "
                            + err.toString(StandardCharsets.UTF_8)
                            + " stdout: "
                            + out.size()
                            + " bytes");
        }
        to.join(10_000);
        te.join(10_000);
        return new Result(p.exitValue(), out.toByteArray(), err.toString(StandardCharsets.UTF_8));
    }

    public static Thread drain(InputStream in, OutputStream out) {
        Thread t =
                new Thread(
                        () -> {
                            byte[] b = new byte[64 * 1024];
                            int n;
                            try {
                                while ((n = in.read(b)) >= 0) {
                                    synchronized (out) {
                                        out.write(b, 0, n);
                                        out.notifyAll();
                                    }
                                }
                            } catch (IOException e) {
                                // process gone
                            }
                        });
        t.setDaemon(true);
        t.start();
        return t;
    }
}

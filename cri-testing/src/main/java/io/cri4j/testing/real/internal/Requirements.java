package io.cri4j.testing.real.internal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;

/**
 * Checks that the third-party binaries a real-runtime test needs are installed. Where one is
 * missing the test is skipped with a reason naming it, except when the environment variable
 * {@code CI} is {@code true}: CI installs the binaries, so there a missing one fails loudly
 * instead of letting the tests silently skip.
 */
public final class Requirements {

    private static final List<Path> SEARCH_PATH = searchPath();

    private Requirements() {}

    /** Finds an executable on {@code PATH} (plus the sbin directories root normally has). */
    public static Optional<Path> find(String binary) {
        for (Path dir : SEARCH_PATH) {
            Path candidate = dir.resolve(binary);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /** Like {@link #find} but aborts or fails the test (see the class comment) when missing. */
    public static Path require(String binary, String debianPackage) {
        Optional<Path> found = find(binary);
        if (found.isEmpty()) {
            unavailable(
                    "'"
                            + binary
                            + "' is not installed (Debian package "
                            + debianPackage
                            + "; .ci/install-test-deps.sh installs everything the real-runtime tests need)");
        }
        return found.get();
    }

    /** Aborts or fails the test when the current user is not root. */
    public static void requireRoot(String what) {
        if (!"root".equals(System.getProperty("user.name")) && !isUid0()) {
            unavailable(
                    what + " needs root (it runs runc, mounts overlays and creates namespaces)");
        }
    }

    /** Skips the calling test with {@code reason}, or fails it when running in CI. */
    public static void unavailable(String reason) {
        unavailable(reason, isCi());
    }

    /** Skips the calling test with {@code reason}, or fails it when {@code ci}. */
    public static void unavailable(String reason, boolean ci) {
        if (ci) {
            throw new IllegalStateException(
                    "CI=true and a real-runtime test cannot run: " + reason);
        }
        Assumptions.abort(reason);
    }

    /** Whether the environment variable {@code CI} is {@code true}. */
    public static boolean isCi() {
        return "true".equalsIgnoreCase(System.getenv("CI"));
    }

    private static boolean isUid0() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return line.split("\\s+")[1].equals("0");
                }
            }
        } catch (Exception e) {
            return false;
        }
        return false;
    }

    private static List<Path> searchPath() {
        List<Path> dirs = new ArrayList<>();
        String path = System.getenv("PATH");
        if (path != null) {
            for (String entry : path.split(":")) {
                if (!entry.isEmpty()) {
                    dirs.add(Path.of(entry));
                }
            }
        }
        for (String extra :
                List.of(
                        "/usr/local/sbin",
                        "/usr/local/bin",
                        "/usr/sbin",
                        "/usr/bin",
                        "/sbin",
                        "/bin")) {
            Path p = Path.of(extra);
            if (!dirs.contains(p)) {
                dirs.add(p);
            }
        }
        return List.copyOf(dirs);
    }
}

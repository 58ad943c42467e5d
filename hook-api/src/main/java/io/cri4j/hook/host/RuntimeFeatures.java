package io.cri4j.hook.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the runtime behind a host honours of the fields CRI can carry, where a runtime takes the
 * field and drops it without a word: a host that knows this reports such a field as it reports a
 * field CRI cannot carry ({@link CriAdjuster}, {@link UnsupportedAdjustment}), per the asking
 * hook's failure policy, instead of letting it vanish.
 *
 * <ul>
 *   <li>CDI devices: CRI's {@code CDI_devices} field is taken from containerd 1.7 on; containerd
 *       1.6 ignores it.
 *   <li>Hugepage limits: a runtime writes them into the OCI spec, and runc drops them where the
 *       node has no hugetlb cgroup controller.
 * </ul>
 *
 * @param runtime the runtime as its {@code Version} names it, e.g. {@code containerd 1.6.20}
 * @param cdiDevices whether CDI devices in a CRI request reach the container
 * @param hugepageLimits whether hugepage limits reach the container's cgroup
 */
public record RuntimeFeatures(String runtime, boolean cdiDevices, boolean hugepageLimits) {

    /** A runtime that honours everything CRI carries (what a host assumes unless told). */
    public static final RuntimeFeatures ALL = new RuntimeFeatures("the runtime", true, true);

    private static final Pattern VERSION = Pattern.compile("v?(\\d+)\\.(\\d+)");

    /** The record; {@code runtime} must not be null. */
    public RuntimeFeatures {
        Objects.requireNonNull(runtime, "runtime");
    }

    /**
     * What a runtime honours on this node, from its CRI {@code Version} answer ({@code
     * runtime_name}, {@code runtime_version}) and, for containerd and CRI-O (runc underneath),
     * this node's cgroups under {@code /sys/fs/cgroup}; other runtimes are taken to honour all.
     */
    public static RuntimeFeatures detect(String runtimeName, String runtimeVersion) {
        return detect(runtimeName, runtimeVersion, Path.of("/sys/fs/cgroup"));
    }

    /** As {@link #detect(String, String)}, with the node's cgroup root given. */
    public static RuntimeFeatures detect(
            String runtimeName, String runtimeVersion, Path cgroupRoot) {
        boolean cdi = true;
        if (runtimeName.equals("containerd")) {
            Matcher m = VERSION.matcher(runtimeVersion);
            if (m.find()) {
                int major = Integer.parseInt(m.group(1));
                int minor = Integer.parseInt(m.group(2));
                cdi = major > 1 || (major == 1 && minor >= 7);
            }
        }
        // runc drops them; a runtime of another kind (a fake, a test backend) is taken at its word
        boolean runc = runtimeName.equals("containerd") || runtimeName.equals("cri-o");
        return new RuntimeFeatures(
                (runtimeName + " " + runtimeVersion).strip(), cdi, !runc || hasHugetlb(cgroupRoot));
    }

    /** Whether the node has a hugetlb cgroup controller (cgroup v2's list, or v1's hierarchy). */
    static boolean hasHugetlb(Path cgroupRoot) {
        Path controllers = cgroupRoot.resolve("cgroup.controllers");
        if (Files.isRegularFile(controllers)) {
            try {
                return (" " + Files.readString(controllers).strip() + " ").contains(" hugetlb ");
            } catch (IOException e) {
                return true;
            }
        }
        return Files.isDirectory(cgroupRoot.resolve("hugetlb"));
    }

    /** Why a CDI device does not reach the container. */
    String cdiReason() {
        return runtime + " ignores CRI's CDI devices (containerd takes them from 1.7 on)";
    }

    /** Why a hugepage limit does not reach the container. */
    String hugepageReason() {
        return "this node has no hugetlb cgroup controller: " + runtime + " would drop the limit";
    }
}

package io.cri4j.hook;

import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * What a hook asks to change on a pod sandbox before it is created ({@link
 * HookEvent#ADJUST_POD_SANDBOX}): labels and annotations to add or overwrite, the cgroup parent,
 * and the pod's Linux resources. A cri4j extension of NRI's model, applied by hosts that see the
 * CRI {@code RunPodSandbox} request (the proxy, the fake runtime); NRI itself has no pod
 * adjustments. Unset parts change nothing: an empty map, an empty cgroup parent, a resources
 * message without fields. Immutable; build with {@link #builder()}.
 *
 * @param labels labels to add or overwrite
 * @param annotations annotations to add or overwrite
 * @param cgroupParent the new cgroup parent, or empty to keep it
 * @param resources the pod's resources, or the default instance to keep them
 */
public record PodSandboxAdjustment(
        Map<String, String> labels,
        Map<String, String> annotations,
        String cgroupParent,
        LinuxResources resources) {

    /** Changes nothing. */
    public static final PodSandboxAdjustment NONE = builder().build();

    /** Validates and copies. */
    public PodSandboxAdjustment {
        labels = Map.copyOf(labels);
        annotations = Map.copyOf(annotations);
        Objects.requireNonNull(cgroupParent, "cgroupParent");
        Objects.requireNonNull(resources, "resources");
    }

    /** True if this changes nothing. */
    public boolean isEmpty() {
        return labels.isEmpty()
                && annotations.isEmpty()
                && cgroupParent.isEmpty()
                && resources.equals(LinuxResources.getDefaultInstance());
    }

    /** A builder of an empty adjustment. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link PodSandboxAdjustment}. */
    public static final class Builder {
        private final Map<String, String> labels = new LinkedHashMap<>();
        private final Map<String, String> annotations = new LinkedHashMap<>();
        private String cgroupParent = "";
        private LinuxResources resources = LinuxResources.getDefaultInstance();

        private Builder() {}

        /** Adds or overwrites a label. */
        public Builder putLabel(String key, String value) {
            labels.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** Adds or overwrites an annotation. */
        public Builder putAnnotation(String key, String value) {
            annotations.put(
                    Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** Sets the cgroup parent (empty keeps the pod's). */
        public Builder cgroupParent(String value) {
            cgroupParent = Objects.requireNonNull(value, "cgroupParent");
            return this;
        }

        /** Sets the pod's Linux resources (fields left unset keep the pod's). */
        public Builder resources(LinuxResources value) {
            resources = Objects.requireNonNull(value, "resources");
            return this;
        }

        /** The adjustment. */
        public PodSandboxAdjustment build() {
            return new PodSandboxAdjustment(labels, annotations, cgroupParent, resources);
        }
    }
}

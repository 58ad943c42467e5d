package io.cri4j.testing.real;

import java.util.List;

/**
 * What one {@link Critest} run found: every spec it ran or skipped, by its full name (the
 * describe texts and the spec's own, e.g. {@code [k8s.io] NRI ... should ...}), and critest's
 * output for diagnostics.
 *
 * @param specs every spec of the run, in the order critest reported them
 * @param output critest's standard output and error
 */
public record CritestReport(List<Spec> specs, String output) {

    /**
     * One spec's outcome.
     *
     * @param name the describe texts and the spec's text, joined by spaces
     * @param state Ginkgo's state: {@code passed}, {@code failed}, {@code skipped}, {@code
     *     panicked}, {@code timedout}, {@code interrupted}, {@code aborted}, {@code pending}
     * @param failure the failure message, empty unless it failed
     * @param millis how long it ran
     */
    public record Spec(String name, String state, String failure, long millis) {

        /** Whether it ran and passed. */
        public boolean passed() {
            return state.equals("passed");
        }

        /** Whether it ran and did not pass. */
        public boolean failed() {
            return !passed() && !state.equals("skipped") && !state.equals("pending");
        }

        /**
         * Whether it started and skipped itself ({@code Skip(reason)} in the spec, e.g. critest's
         * NRI specs on a runtime discrepancy they tolerate); {@link #failure()} holds the reason.
         * A spec left out by the focus is skipped without a reason.
         */
        public boolean skippedItself() {
            return state.equals("skipped") && !failure.isBlank();
        }
    }

    /** The report; {@code specs} copied. */
    public CritestReport {
        specs = List.copyOf(specs);
    }

    /** The specs that passed. */
    public List<Spec> passed() {
        return specs.stream().filter(Spec::passed).toList();
    }

    /** The specs that ran and did not pass, with their failure messages. */
    public List<Spec> failed() {
        return specs.stream().filter(Spec::failed).toList();
    }

    /** The specs that started and skipped themselves, with their reasons. */
    public List<Spec> skippedThemselves() {
        return specs.stream().filter(Spec::skippedItself).toList();
    }

    /** The names of the specs that ran and did not pass. */
    public List<String> failedNames() {
        return failed().stream().map(Spec::name).toList();
    }

    /** A short account: counts, then each failed spec with its message and each self-skipped one with its reason. */
    public String summary() {
        StringBuilder b =
                new StringBuilder()
                        .append(passed().size())
                        .append(" passed, ")
                        .append(failed().size())
                        .append(" failed of ")
                        .append(passed().size() + failed().size())
                        .append(" run, ")
                        .append(skippedThemselves().size())
                        .append(" skipped themselves");
        for (Spec s : failed()) {
            b.append("\n  FAILED ").append(s.name()).append(": ").append(s.failure().strip());
        }
        for (Spec s : skippedThemselves()) {
            b.append("\n  SKIPPED ").append(s.name()).append(": ").append(s.failure().strip());
        }
        return b.toString();
    }
}

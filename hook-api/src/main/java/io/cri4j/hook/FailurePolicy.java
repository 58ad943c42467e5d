package io.cri4j.hook;

/** What a failing or timed-out pre-hook does to the CRI call (Koordinator's spelling). */
public enum FailurePolicy {
    /** Fail the CRI call with a status naming the hook and its error. */
    FAIL("Fail"),
    /** Log the error and forward the request without this hook's changes (the default). */
    IGNORE("Ignore");

    private final String configName;

    FailurePolicy(String configName) {
        this.configName = configName;
    }

    /** The spelling in hook config files. */
    public String configName() {
        return configName;
    }

    /**
     * Parses a config value; an empty or absent value means {@link #IGNORE}, like Koordinator's
     * {@code PolicyNone}.
     *
     * @throws IllegalArgumentException for any other spelling
     */
    public static FailurePolicy parse(String value) {
        if (value == null || value.isEmpty() || value.equals("Ignore")) {
            return IGNORE;
        }
        if (value.equals("Fail")) {
            return FAIL;
        }
        throw new IllegalArgumentException(
                "failure-policy must be \"Fail\" or \"Ignore\", got \"" + value + "\"");
    }
}

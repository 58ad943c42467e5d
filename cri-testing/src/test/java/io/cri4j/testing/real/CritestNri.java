package io.cri4j.testing.real;

/** What cri-tools' NRI conformance specs (critest of cri-tools ba03eab) hold. */
final class CritestNri {
    /** The NRI specs containerd 2.3.4 runs and passes. */
    static final int SPECS = 11;

    private CritestNri() {}
}

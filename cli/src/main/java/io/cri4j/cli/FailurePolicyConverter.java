package io.cri4j.cli;

import io.cri4j.hook.FailurePolicy;
import picocli.CommandLine;

/** {@code Fail} or {@code Ignore}, spelled as in hook config files. */
final class FailurePolicyConverter implements CommandLine.ITypeConverter<FailurePolicy> {

    @Override
    public FailurePolicy convert(String v) {
        try {
            return FailurePolicy.parse(v);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
        }
    }
}

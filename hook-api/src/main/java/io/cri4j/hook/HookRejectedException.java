package io.cri4j.hook;

import java.util.Objects;

/**
 * A validating hook rejected a container's merged adjustment ({@link
 * HookEvent#VALIDATE_CONTAINER_ADJUSTMENT}); the container is not created.
 */
public class HookRejectedException extends HookException {
    private static final long serialVersionUID = 1L;

    private final String reason;

    /**
     * @param validator the rejecting hook
     * @param reason why, as the validator said it
     * @param cause the validator's exception, or null
     */
    public HookRejectedException(String validator, String reason, Throwable cause) {
        super(
                validator,
                HookEvent.VALIDATE_CONTAINER_ADJUSTMENT,
                "ValidateContainerAdjustment:"
                        + " validator \""
                        + validator
                        + "\" rejected the container adjustment: "
                        + Objects.requireNonNull(reason, "reason"),
                cause);
        this.reason = reason;
    }

    /** The validator's reason. */
    public String reason() {
        return reason;
    }
}

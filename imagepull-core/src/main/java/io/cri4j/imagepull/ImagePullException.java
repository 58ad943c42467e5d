package io.cri4j.imagepull;

/**
 * A pull that failed: attempts exhausted, the active deadline passed, or no attempt could start.
 * The message names the image and the cause; {@link #getCause()} is the last attempt's error.
 */
public class ImagePullException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String image;
    private final int attempts;

    /**
     * @param image the image reference
     * @param attempts attempts made
     * @param message what happened, naming the image
     * @param cause the last error, may be null
     */
    public ImagePullException(String image, int attempts, String message, Throwable cause) {
        super(message, cause);
        this.image = image;
        this.attempts = attempts;
    }

    /** @return the image reference */
    public String image() {
        return image;
    }

    /** @return attempts made */
    public int attempts() {
        return attempts;
    }
}

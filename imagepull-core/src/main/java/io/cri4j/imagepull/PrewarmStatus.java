package io.cri4j.imagepull;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A snapshot of a pre-warming set, like NodeImage's status.
 *
 * @param images image name to its tags' statuses, in the desired set's order
 * @param desired tags desired
 * @param waiting tags waiting for a worker
 * @param pulling tags being pulled (including back-off between attempts)
 * @param succeeded tags present
 * @param failed tags that failed
 */
public record PrewarmStatus(
        Map<String, List<TagStatus>> images,
        int desired,
        int waiting,
        int pulling,
        int succeeded,
        int failed) {

    /** Copies. */
    public PrewarmStatus {
        images = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(images));
    }

    /** Phase of one tag. */
    public enum Phase {
        /** Queued for a worker. */
        WAITING,
        /** Pulling, or backing off between attempts. */
        PULLING,
        /** The image is present. */
        SUCCEEDED,
        /** Gave up; the message says why. */
        FAILED
    }

    /**
     * @param image image name
     * @param tag the tag
     * @return the tag's status, if the tag is in the set
     */
    public Optional<TagStatus> tag(String image, String tag) {
        return images.getOrDefault(image, List.of()).stream()
                .filter(t -> t.tag().equals(tag))
                .findFirst();
    }

    /**
     * Status of one tag.
     *
     * @param image image name
     * @param tag tag
     * @param version the version being (or that was) pulled
     * @param phase phase
     * @param progress percent 0..100, -1 when unknown
     * @param startTime when its worker started
     * @param completionTime when it succeeded or failed
     * @param message the last message (failure cause, back-off note)
     * @param imageId the runtime's image ID once pulled
     */
    public record TagStatus(
            String image,
            String tag,
            String version,
            Phase phase,
            int progress,
            Instant startTime,
            Optional<Instant> completionTime,
            String message,
            String imageId) {}
}

package io.cri4j.testing.real;

import java.util.List;
import java.util.Objects;

/**
 * A {@link TestImage} as it is stored in a {@link LocalRegistry}, read back from the registry
 * after the push: the digests and sizes are the ones a client pulling {@link #reference()} sees.
 *
 * @param reference the pullable reference, {@code 127.0.0.1:PORT/repository:tag}
 * @param repository the repository path inside the registry, e.g. {@code cri4j/busybox}
 * @param tag the tag
 * @param manifest the descriptor the tag resolves to (an image manifest or, for
 *     {@link TestImage.Format#OCI_INDEX}, the index)
 * @param platformManifest the image manifest for this host's platform (the same as
 *     {@code manifest} unless the tag points at an index)
 * @param config the image config blob of {@code platformManifest}
 * @param layers the layer blobs of {@code platformManifest}, in order, with their compressed
 *     sizes as transferred on a pull
 * @param platforms the {@code os/architecture} entries of the index, or just this host's
 *     platform for a single manifest
 */
public record PushedImage(
        String reference,
        String repository,
        String tag,
        Blob manifest,
        Blob platformManifest,
        Blob config,
        List<Blob> layers,
        List<String> platforms) {

    /**
     * A content-addressed blob or manifest.
     *
     * @param mediaType its media type
     * @param digest {@code sha256:<hex>}
     * @param size its size in bytes
     */
    public record Blob(String mediaType, String digest, long size) {
        /** Validates the fields. */
        public Blob {
            Objects.requireNonNull(mediaType, "mediaType");
            Objects.requireNonNull(digest, "digest");
            if (size < 0) {
                throw new IllegalArgumentException("negative size " + size + " for " + digest);
            }
        }
    }

    /** Validates and copies the fields. */
    public PushedImage {
        Objects.requireNonNull(reference, "reference");
        Objects.requireNonNull(manifest, "manifest");
        Objects.requireNonNull(platformManifest, "platformManifest");
        Objects.requireNonNull(config, "config");
        layers = List.copyOf(layers);
        platforms = List.copyOf(platforms);
    }

    /** Sum of the (compressed) layer sizes: the bytes a pull of all layers transfers. */
    public long layersSize() {
        return layers.stream().mapToLong(Blob::size).sum();
    }

    /** The reference pinned to the manifest digest: {@code 127.0.0.1:PORT/repository@sha256:...}. */
    public String digestReference() {
        int slash = reference.indexOf('/');
        return reference.substring(0, slash) + "/" + repository + "@" + manifest.digest();
    }
}

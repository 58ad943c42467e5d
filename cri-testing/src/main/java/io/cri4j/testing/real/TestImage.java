package io.cri4j.testing.real;

import java.util.Objects;

/**
 * A small test image that the harness builds offline (from Debian's static busybox, a static
 * pause program and random bytes) and pushes to a {@link LocalRegistry} on demand with
 * {@link LocalRegistry#push(TestImage)}. Each image is built once per JVM and cached as an OCI
 * layout in a temp dir; pushing it to another registry reuses that layout.
 *
 * <p>Images and the references they get in a registry at {@code 127.0.0.1:PORT}:
 * <ul>
 *   <li>{@link #busybox()}: {@code 127.0.0.1:PORT/cri4j/busybox:1.0}, an OCI image manifest; one
 *       layer with {@code /bin/busybox} and its applet links, {@code PATH=/bin}, cmd {@code sh};
 *   <li>{@link #busyboxDocker()}: {@code cri4j/busybox-docker:1.0}, the same content as a Docker
 *       image manifest (schema 2, {@code application/vnd.docker.distribution.manifest.v2+json});
 *   <li>{@link #busyboxMultiPlatform()}: {@code cri4j/busybox-multi:1.0}, an OCI image index with
 *       a manifest for this host's architecture and one for another architecture;
 *   <li>{@link #pause()}: {@code cri4j/pause:1.0}, a static program that sleeps in
 *       {@code pause()} and exits 0 on SIGTERM or SIGINT (what containerd uses as sandbox image);
 *   <li>{@link #large(long)}: {@code cri4j/large:<bytes>}, busybox plus a layer holding a file of
 *       {@code bytes} random bytes (incompressible, so the layer is about that size), for
 *       progress tests.
 * </ul>
 */
public final class TestImage {

    /** How the image is stored in the registry. */
    public enum Format {
        /** An OCI image manifest ({@code application/vnd.oci.image.manifest.v1+json}). */
        OCI,
        /** A Docker image manifest, schema 2 ({@code application/vnd.docker.distribution.manifest.v2+json}). */
        DOCKER_V2S2,
        /** An OCI image index ({@code application/vnd.oci.image.index.v1+json}) over several platforms. */
        OCI_INDEX
    }

    /** What the image contains. */
    public enum Content {
        /** Static busybox with its applet links under {@code /bin}. */
        BUSYBOX,
        /** The static pause program at {@code /pause}. */
        PAUSE,
        /** Busybox plus a layer with {@code /random.bin} of random bytes. */
        BUSYBOX_WITH_RANDOM_LAYER
    }

    /** Size of the random layer of {@link #large()}: 64 MiB. */
    public static final long DEFAULT_LARGE_BYTES = 64L * 1024 * 1024;

    private final String repository;
    private final String tag;
    private final Format format;
    private final Content content;
    private final long randomBytes;

    private TestImage(
            String repository, String tag, Format format, Content content, long randomBytes) {
        this.repository = repository;
        this.tag = tag;
        this.format = format;
        this.content = content;
        this.randomBytes = randomBytes;
    }

    /** Busybox as an OCI image: {@code cri4j/busybox:1.0}. */
    public static TestImage busybox() {
        return new TestImage("cri4j/busybox", "1.0", Format.OCI, Content.BUSYBOX, 0);
    }

    /** Busybox as a Docker schema 2 image: {@code cri4j/busybox-docker:1.0}. */
    public static TestImage busyboxDocker() {
        return new TestImage("cri4j/busybox-docker", "1.0", Format.DOCKER_V2S2, Content.BUSYBOX, 0);
    }

    /** Busybox behind an OCI image index with two platforms: {@code cri4j/busybox-multi:1.0}. */
    public static TestImage busyboxMultiPlatform() {
        return new TestImage("cri4j/busybox-multi", "1.0", Format.OCI_INDEX, Content.BUSYBOX, 0);
    }

    /** The pause image: {@code cri4j/pause:1.0}. */
    public static TestImage pause() {
        return new TestImage("cri4j/pause", "1.0", Format.OCI, Content.PAUSE, 0);
    }

    /** Busybox plus a {@link #DEFAULT_LARGE_BYTES} random layer: {@code cri4j/large:67108864}. */
    public static TestImage large() {
        return large(DEFAULT_LARGE_BYTES);
    }

    /** Busybox plus a layer with {@code randomBytes} random bytes: {@code cri4j/large:<bytes>}. */
    public static TestImage large(long randomBytes) {
        if (randomBytes < 1 || randomBytes > (4L << 30)) {
            throw new IllegalArgumentException(
                    "random layer size must be between 1 byte and 4 GiB, got " + randomBytes);
        }
        return new TestImage(
                "cri4j/large",
                Long.toString(randomBytes),
                Format.OCI,
                Content.BUSYBOX_WITH_RANDOM_LAYER,
                randomBytes);
    }

    /** Repository path inside the registry, e.g. {@code cri4j/busybox}. */
    public String repository() {
        return repository;
    }

    /** The tag, e.g. {@code 1.0}. */
    public String tag() {
        return tag;
    }

    /** The manifest format in the registry. */
    public Format format() {
        return format;
    }

    /** What the image holds. */
    public Content content() {
        return content;
    }

    /** Size of the random file for {@link Content#BUSYBOX_WITH_RANDOM_LAYER}, else 0. */
    public long randomBytes() {
        return randomBytes;
    }

    /** The reference of this image in the registry at {@code hostPort}: {@code hostPort/repo:tag}. */
    public String referenceIn(String hostPort) {
        return hostPort + "/" + repository + ":" + tag;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TestImage other
                && repository.equals(other.repository)
                && tag.equals(other.tag)
                && format == other.format
                && content == other.content
                && randomBytes == other.randomBytes;
    }

    @Override
    public int hashCode() {
        return Objects.hash(repository, tag, format, content, randomBytes);
    }

    @Override
    public String toString() {
        return repository + ":" + tag + " (" + format + ")";
    }
}

package io.cri4j.testing.real.internal;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.testing.real.TestImage;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds the {@link TestImage}s as OCI layouts with umoci, once per JVM, in a temp dir removed
 * when the JVM exits.
 */
public final class ImageBuilder {

    /** Where a built image lives: push {@code oci:layout:tag} ({@code all} for an index). */
    public record Source(Path layout, String tag, boolean all) {
        /** The skopeo source reference. */
        public String skopeoReference() {
            return "oci:" + layout + ":" + tag;
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(ImageBuilder.class);
    private static final Duration STEP_TIMEOUT = Duration.ofMinutes(2);
    private static final ImageBuilder INSTANCE = new ImageBuilder();

    private static final String PAUSE_C =
            """
            #include <signal.h>
            #include <unistd.h>

            static void done(int sig) { (void) sig; _exit(0); }

            int main(void) {
                struct sigaction sa = {0};
                sa.sa_handler = done;
                sigaction(SIGTERM, &sa, 0);
                sigaction(SIGINT, &sa, 0);
                for (;;) {
                    pause();
                }
            }
            """;

    private final Map<String, Source> built = new HashMap<>();
    private Path root;

    private ImageBuilder() {}

    /** The JVM-wide builder. */
    public static ImageBuilder shared() {
        return INSTANCE;
    }

    /** The binaries {@link #build} needs for {@code image}; checked (skip or fail) before use. */
    public static void requireTools(TestImage image) {
        Requirements.require("umoci", "umoci");
        Requirements.require("skopeo", "skopeo");
        if (image.content() == TestImage.Content.PAUSE) {
            Requirements.require("gcc", "gcc and libc6-dev");
        } else {
            Path busybox = Requirements.find("busybox").orElse(null);
            if (busybox == null || !isStaticElf(busybox)) {
                Requirements.unavailable(
                        "a static busybox is needed at /bin/busybox (Debian package "
                                + "busybox-static), found "
                                + (busybox == null ? "none" : "a dynamic " + busybox));
            }
        }
    }

    /** Builds {@code image} unless it was built before in this JVM, and says where it is. */
    public synchronized Source build(TestImage image) {
        requireTools(image);
        String key = image.content() + "/" + image.format() + "/" + image.randomBytes();
        Source source = built.get(key);
        if (source == null) {
            long start = System.nanoTime();
            source =
                    switch (image.content()) {
                        case BUSYBOX ->
                                image.format() == TestImage.Format.OCI_INDEX
                                        ? buildIndex()
                                        : buildBusybox();
                        case PAUSE -> buildPause();
                        case BUSYBOX_WITH_RANDOM_LAYER -> buildLarge(image.randomBytes());
                    };
            built.put(key, source);
            LOG.info(
                    "test image {} ready (built or reused) in {} ms",
                    image,
                    (System.nanoTime() - start) / 1_000_000);
        }
        return source;
    }

    private Path root() {
        if (root == null) {
            root = TempDirs.create(StaleHarnessDirs.IMAGES_PREFIX);
            StaleHarnessDirs.markOwned(root);
            Path dir = root;
            Runtime.getRuntime()
                    .addShutdownHook(
                            new Thread(
                                    () -> TempDirs.deleteRecursively(dir), "cri4j-images-cleanup"));
        }
        return root;
    }

    private Source buildBusybox() {
        Path layout = root().resolve("busybox");
        if (!Files.exists(layout)) {
            Path rootfs = busyboxRootfs();
            singleLayerImage(
                    layout,
                    rootfs,
                    "--config.env",
                    "PATH=/bin",
                    "--config.cmd",
                    "sh",
                    "--config.workingdir",
                    "/");
        }
        return new Source(layout, "1.0", false);
    }

    private Source buildIndex() {
        Path layout = buildBusybox().layout();
        if (!hasTag(layout, "multi")) {
            String other = hostArch().equals("arm64") ? "amd64" : "arm64";
            umoci(
                    "config",
                    "--image",
                    layout + ":1.0",
                    "--architecture",
                    other,
                    "--tag",
                    "1.0-" + other);
            JsonArray manifests = new JsonArray();
            manifests.add(platformEntry(layout, "1.0", hostArch()));
            manifests.add(platformEntry(layout, "1.0-" + other, other));
            JsonObject index = new JsonObject();
            index.addProperty("schemaVersion", 2);
            index.addProperty("mediaType", "application/vnd.oci.image.index.v1+json");
            index.add("manifests", manifests);
            byte[] bytes = index.toString().getBytes(StandardCharsets.UTF_8);
            String digest = writeBlob(layout, bytes);
            addTag(
                    layout,
                    "multi",
                    "application/vnd.oci.image.index.v1+json",
                    digest,
                    bytes.length);
        }
        return new Source(layout, "multi", true);
    }

    private Source buildPause() {
        Path layout = root().resolve("pause");
        if (!Files.exists(layout)) {
            Path work = root().resolve("pause-build");
            Path rootfs = work.resolve("rootfs");
            try {
                Files.createDirectories(rootfs);
                Files.writeString(work.resolve("pause.c"), PAUSE_C);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            Commands.run(
                    STEP_TIMEOUT,
                    work,
                    Map.of(),
                    List.of(
                            "gcc",
                            "-static",
                            "-Os",
                            "-s",
                            "-o",
                            rootfs.resolve("pause").toString(),
                            "pause.c"));
            singleLayerImage(layout, rootfs, "--config.entrypoint", "/pause");
        }
        return new Source(layout, "1.0", false);
    }

    private Source buildLarge(long bytes) {
        Path layout = buildBusybox().layout();
        String tag = "large-" + bytes;
        if (!hasTag(layout, tag)) {
            Path dir = root().resolve("random-" + bytes);
            try {
                Files.createDirectories(dir);
                writeRandom(dir.resolve("random.bin"), bytes);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            umoci("insert", "--image", layout + ":1.0", "--tag", tag, dir.toString(), "/");
            TempDirs.deleteRecursively(dir);
        }
        return new Source(layout, tag, false);
    }

    private Path busyboxRootfs() {
        Path rootfs = root().resolve("busybox-rootfs");
        Path busybox = Requirements.find("busybox").orElseThrow();
        try {
            Path bin = Files.createDirectories(rootfs.resolve("bin"));
            for (String d : List.of("etc", "tmp", "proc", "sys", "dev", "root")) {
                Files.createDirectories(rootfs.resolve(d));
            }
            Files.copy(busybox, bin.resolve("busybox"));
            String applets = Commands.run(STEP_TIMEOUT, busybox.toString(), "--list");
            for (String applet : applets.split("\\s+")) {
                if (!applet.isEmpty() && !applet.equals("busybox") && !applet.contains("/")) {
                    Files.createSymbolicLink(bin.resolve(applet), Path.of("busybox"));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot assemble the busybox rootfs", e);
        }
        return rootfs;
    }

    private static void writeRandom(Path file, long bytes) throws IOException {
        SplittableRandom random = new SplittableRandom(bytes);
        byte[] chunk = new byte[1 << 16];
        try (OutputStream out = Files.newOutputStream(file)) {
            long left = bytes;
            while (left > 0) {
                for (int i = 0; i < chunk.length; i += 8) {
                    long v = random.nextLong();
                    for (int j = 0; j < 8; j++) {
                        chunk[i + j] = (byte) (v >>> (8 * j));
                    }
                }
                int n = (int) Math.min(chunk.length, left);
                out.write(chunk, 0, n);
                left -= n;
            }
        }
    }

    private static JsonObject platformEntry(Path layout, String tag, String arch) {
        JsonObject descriptor = findTag(layout, tag).deepCopy();
        descriptor.remove("annotations");
        JsonObject platform = new JsonObject();
        platform.addProperty("architecture", arch);
        platform.addProperty("os", "linux");
        descriptor.add("platform", platform);
        return descriptor;
    }

    private static boolean hasTag(Path layout, String tag) {
        return findTag(layout, tag) != null;
    }

    private static JsonObject findTag(Path layout, String tag) {
        for (var element : readIndex(layout).getAsJsonArray("manifests")) {
            JsonObject m = element.getAsJsonObject();
            JsonObject annotations = m.getAsJsonObject("annotations");
            if (annotations != null
                    && annotations.has("org.opencontainers.image.ref.name")
                    && tag.equals(
                            annotations.get("org.opencontainers.image.ref.name").getAsString())) {
                return m;
            }
        }
        return null;
    }

    private static JsonObject readIndex(Path layout) {
        try {
            return JsonParser.parseString(Files.readString(layout.resolve("index.json")))
                    .getAsJsonObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void addTag(
            Path layout, String tag, String mediaType, String digest, long size) {
        JsonObject index = readIndex(layout);
        JsonObject entry = new JsonObject();
        entry.addProperty("mediaType", mediaType);
        entry.addProperty("digest", digest);
        entry.addProperty("size", size);
        JsonObject annotations = new JsonObject();
        annotations.addProperty("org.opencontainers.image.ref.name", tag);
        entry.add("annotations", annotations);
        index.getAsJsonArray("manifests").add(entry);
        try {
            Files.writeString(layout.resolve("index.json"), index.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String writeBlob(Path layout, byte[] bytes) {
        try {
            String hex =
                    HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
            Files.write(layout.resolve("blobs").resolve("sha256").resolve(hex), bytes);
            return "sha256:" + hex;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * A new layout holding image {@code :1.0}: {@code rootfs} as its one layer, this host's
     * platform, and {@code config} (umoci's {@code --config.*} options).
     */
    private static void singleLayerImage(Path layout, Path rootfs, String... config) {
        umoci("init", "--layout", layout.toString());
        umoci("new", "--image", layout + ":1.0");
        umoci("insert", "--image", layout + ":1.0", rootfs.toString(), "/");
        List<String> args = new java.util.ArrayList<>();
        args.addAll(
                List.of(
                        "config",
                        "--image",
                        layout + ":1.0",
                        "--os",
                        "linux",
                        "--architecture",
                        hostArch()));
        args.addAll(List.of(config));
        umoci(args.toArray(String[]::new));
    }

    private static void umoci(String... args) {
        List<String> command = new java.util.ArrayList<>();
        command.add(Requirements.require("umoci", "umoci").toString());
        command.addAll(List.of(args));
        Commands.run(STEP_TIMEOUT, null, Map.of(), command);
    }

    /** This host's architecture in OCI terms. */
    public static String hostArch() {
        String arch = System.getProperty("os.arch");
        return switch (arch) {
            case "amd64", "x86_64" -> "amd64";
            case "aarch64", "arm64" -> "arm64";
            case "ppc64le" -> "ppc64le";
            case "s390x" -> "s390x";
            default -> arch;
        };
    }

    /** Whether an ELF file has no program interpreter (is statically linked). */
    static boolean isStaticElf(Path file) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer header = ByteBuffer.allocate(64);
            ch.read(header, 0);
            header.flip();
            if (header.remaining() < 64 || header.getInt(0) != 0x7f454c46 || header.get(4) != 2) {
                return false; // not a 64-bit ELF: do not guess
            }
            header.order(header.get(5) == 1 ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN);
            long phoff = header.getLong(32);
            int phentsize = Short.toUnsignedInt(header.getShort(54));
            int phnum = Short.toUnsignedInt(header.getShort(56));
            ByteBuffer ph = ByteBuffer.allocate(phentsize * phnum).order(header.order());
            ch.read(ph, phoff);
            for (int i = 0; i < phnum; i++) {
                if (ph.getInt(i * phentsize) == 3) { // PT_INTERP
                    return false;
                }
            }
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}

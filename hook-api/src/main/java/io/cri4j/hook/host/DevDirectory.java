package io.cri4j.hook.host;

import java.io.IOException;
import java.nio.file.FileVisitOption;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@link DeviceNodes} over a directory like {@code /dev}: reads a node's type and number from
 * its {@code unix:mode} and {@code unix:rdev} attributes (Linux's {@code dev_t} encoding).
 */
final class DevDirectory implements DeviceNodes {
    /** The host's {@code /dev}. */
    static final DevDirectory SYSTEM = new DevDirectory(Path.of("/dev"));

    private static final int S_IFMT = 0170000;
    private static final int S_IFCHR = 0020000;
    private static final int S_IFBLK = 0060000;
    private static final int MAX_DEPTH = 4;

    private final Path root;
    private final Map<String, Path> cache = new ConcurrentHashMap<>();

    /** Lookups under {@code root}. */
    DevDirectory(Path root) {
        this.root = root;
    }

    @Override
    public Optional<DeviceNode> find(String type, long major, long minor) {
        String t = normalize(type);
        if (t == null) {
            return Optional.empty();
        }
        String key = t + major + ":" + minor;
        Path cached = cache.get(key);
        if (cached != null) {
            Optional<DeviceNode> n = stat(cached).filter(d -> matches(d, t, major, minor));
            if (n.isPresent()) {
                return n;
            }
            cache.remove(key);
        }
        Path link = root.resolve(t.equals("b") ? "block" : "char").resolve(major + ":" + minor);
        Optional<DeviceNode> viaLink = stat(link).filter(d -> matches(d, t, major, minor));
        if (viaLink.isPresent()) {
            cache.put(key, link);
            return viaLink;
        }
        List<DeviceNode> candidates = new ArrayList<>();
        try {
            Files.walkFileTree(
                    root,
                    EnumSet.noneOf(FileVisitOption.class),
                    MAX_DEPTH,
                    new SimpleFileVisitor<>() {
                        @Override
                        public FileVisitResult visitFile(Path p, BasicFileAttributes attrs) {
                            if (attrs.isOther()) {
                                stat(p).filter(d -> matches(d, t, major, minor))
                                        .ifPresent(candidates::add);
                            }
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult visitFileFailed(Path p, IOException e) {
                            return FileVisitResult.CONTINUE;
                        }
                    });
        } catch (IOException e) {
            return Optional.empty();
        }
        Optional<DeviceNode> found =
                candidates.stream()
                        .min(
                                Comparator.comparingInt((DeviceNode d) -> d.path().getNameCount())
                                        .thenComparingInt(d -> d.path().toString().length())
                                        .thenComparing(d -> d.path().toString()));
        found.ifPresent(d -> cache.put(key, d.path()));
        return found;
    }

    @Override
    public Optional<DeviceNode> stat(Path path) {
        try {
            int mode = (Integer) Files.getAttribute(path, "unix:mode");
            String type;
            if ((mode & S_IFMT) == S_IFCHR) {
                type = "c";
            } else if ((mode & S_IFMT) == S_IFBLK) {
                type = "b";
            } else {
                return Optional.empty();
            }
            long rdev = (Long) Files.getAttribute(path, "unix:rdev");
            int uid = (Integer) Files.getAttribute(path, "unix:uid");
            int gid = (Integer) Files.getAttribute(path, "unix:gid");
            return Optional.of(
                    new DeviceNode(path, type, major(rdev), minor(rdev), mode & 07777, uid, gid));
        } catch (IOException
                | UnsupportedOperationException
                | IllegalArgumentException
                | ClassCastException
                | SecurityException e) {
            return Optional.empty();
        }
    }

    /** Linux's {@code gnu_dev_major}. */
    static long major(long dev) {
        return ((dev >>> 8) & 0xfffL) | ((dev >>> 32) & ~0xfffL & 0xffffffffL);
    }

    /** Linux's {@code gnu_dev_minor}. */
    static long minor(long dev) {
        return (dev & 0xffL) | ((dev >>> 12) & ~0xffL & 0xffffffffL);
    }

    private static String normalize(String type) {
        if (type == null) {
            return null;
        }
        return switch (type) {
            case "c", "u" -> "c";
            case "b" -> "b";
            default -> null;
        };
    }

    private static boolean matches(DeviceNode d, String type, long major, long minor) {
        return d.type().equals(type) && d.major() == major && d.minor() == minor;
    }
}

package io.cri4j.testing.real.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Temporary directories that may hold mounts (overlay rootfs, netns and shm bind mounts). */
public final class TempDirs {

    private static final Logger LOG = LoggerFactory.getLogger(TempDirs.class);

    /** Longest temp base dir used; longer ones would push socket paths over 107 bytes. */
    static final int MAX_BASE_LENGTH = 48;

    private TempDirs() {}

    /** The directories {@link #create} may put temp dirs in. */
    public static List<Path> bases() {
        List<Path> bases = new ArrayList<>();
        try {
            bases.add(Path.of(System.getProperty("java.io.tmpdir")).toRealPath());
        } catch (IOException e) {
            // not there: nothing created in it either
        }
        if (!bases.contains(Path.of("/tmp"))) {
            bases.add(Path.of("/tmp"));
        }
        return bases;
    }

    /**
     * Creates a fresh directory under the system temp dir. Kept short: containerd's socket lives
     * in it and unix socket paths are limited to 107 bytes.
     */
    public static Path create(String prefix) {
        try {
            Path base = Path.of(System.getProperty("java.io.tmpdir")).toRealPath();
            if (base.toString().length() > MAX_BASE_LENGTH) {
                base = Path.of("/tmp"); // keep socket paths in the dir below the kernel's limit
            }
            return Files.createTempDirectory(base, prefix).toRealPath();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temp dir", e);
        }
    }

    /** Mount points at or below {@code dir}, deepest first, from /proc/self/mountinfo. */
    public static List<Path> mountsUnder(Path dir) {
        List<Path> mounts = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] fields = line.split(" ");
                if (fields.length < 5) {
                    continue;
                }
                Path mountPoint = Path.of(unescape(fields[4]));
                if (mountPoint.startsWith(dir) && !mounts.contains(mountPoint)) {
                    mounts.add(mountPoint);
                }
            }
        } catch (IOException e) {
            LOG.warn("cannot read /proc/self/mountinfo: {}", e.toString());
        }
        mounts.sort(Comparator.comparingInt(Path::getNameCount).reversed());
        return mounts;
    }

    /** Unmounts everything mounted at or below {@code dir} (lazily when busy). */
    public static void unmountAllUnder(Path dir) {
        for (int round = 0; round < 3; round++) {
            List<Path> mounts = mountsUnder(dir);
            if (mounts.isEmpty()) {
                return;
            }
            for (Path mount : mounts) {
                Commands.Result r =
                        Commands.exec(
                                Duration.ofSeconds(10),
                                null,
                                java.util.Map.of(),
                                List.of("umount", mount.toString()));
                if (!r.ok()) {
                    Commands.exec(
                            Duration.ofSeconds(10),
                            null,
                            java.util.Map.of(),
                            List.of("umount", "-l", mount.toString()));
                }
            }
        }
    }

    /**
     * Unmounts what is mounted below {@code dir}, then deletes it without following symlinks or
     * descending into a mount that could not be removed.
     */
    public static void deleteRecursively(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        unmountAllUnder(dir);
        Set<Path> remaining = Set.copyOf(mountsUnder(dir));
        if (!remaining.isEmpty()) {
            LOG.warn("mounts remain under {} and are left in place: {}", dir, remaining);
        }
        try {
            Files.walkFileTree(
                    dir,
                    new SimpleFileVisitor<>() {
                        @Override
                        public FileVisitResult preVisitDirectory(
                                Path d, BasicFileAttributes attrs) {
                            return remaining.contains(d)
                                    ? FileVisitResult.SKIP_SUBTREE
                                    : FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
                                throws IOException {
                            Files.deleteIfExists(file);
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult visitFileFailed(Path file, IOException exc) {
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult postVisitDirectory(Path d, IOException exc) {
                            try {
                                Files.deleteIfExists(d);
                            } catch (DirectoryNotEmptyException | NoSuchFileException e) {
                                // something we had to leave (a mount) is inside
                            } catch (IOException e) {
                                LOG.warn("cannot delete {}: {}", d, e.toString());
                            }
                            return FileVisitResult.CONTINUE;
                        }
                    });
        } catch (IOException e) {
            LOG.warn("cannot delete {}: {}", dir, e.toString());
        }
    }

    /** mountinfo escapes space, tab, newline and backslash as octal. */
    private static String unescape(String s) {
        if (s.indexOf('\\') < 0) {
            return s;
        }
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 3 < s.length()) {
                b.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}

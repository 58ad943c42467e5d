package io.cri4j.hook.host;

import java.nio.file.Path;
import java.util.Optional;

/**
 * Finds device nodes on the host. An NRI device names a type and a major/minor number; a CRI
 * {@code Device} needs a host path the runtime can bind, and the reverse conversion needs the
 * number of a host path.
 */
public interface DeviceNodes {

    /** A device node: its path, type ({@code c} or {@code b}), numbers, mode bits and owner. */
    record DeviceNode(
            Path path, String type, long major, long minor, int fileMode, int uid, int gid) {}

    /**
     * A host node of this type ({@code c}, {@code u} or {@code b}) and number, e.g. {@code
     * /dev/null} for {@code c 1:3}.
     */
    Optional<DeviceNode> find(String type, long major, long minor);

    /** The node at {@code path} (symbolic links followed), or empty if it is not a device. */
    Optional<DeviceNode> stat(Path path);

    /**
     * The host's {@code /dev}: {@code /dev/char/MAJ:MIN} and {@code /dev/block/MAJ:MIN} where udev
     * made them, else a scan of {@code /dev} (the shortest path wins, e.g. {@code /dev/null} over
     * an alias). Results are cached and re-checked on use.
     */
    static DeviceNodes system() {
        return DevDirectory.SYSTEM;
    }

    /** The same lookup under another directory than {@code /dev} (for containers and tests). */
    static DeviceNodes under(Path devDirectory) {
        return new DevDirectory(devDirectory);
    }
}

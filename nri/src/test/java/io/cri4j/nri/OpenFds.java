package io.cri4j.nri;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The sockets, pipes and event descriptors (epoll, eventfd) this JVM has open, by what each one
 * is, so that a test compares what a host or plugin left open with what was open before it. Files
 * are left out: the JVM opens a class-path jar the first time it loads a class from it and keeps
 * it open, which is not a leak of the code under test.
 */
final class OpenFds {

    private final List<String> targets;

    private OpenFds(List<String> targets) {
        this.targets = targets;
    }

    static OpenFds now() throws IOException {
        List<String> targets = new ArrayList<>();
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : (Iterable<Path>) s::iterator) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (!target.startsWith("/")) {
                        targets.add(target);
                    }
                } catch (IOException e) {
                    // closed between the listing and the read: not open any more
                }
            }
        }
        return new OpenFds(targets);
    }

    /**
     * What is open now that was not open in {@code before}, e.g. {@code socket:[4711]}; counted, as
     * every epoll descriptor reads {@code anon_inode:[eventpoll]}.
     */
    List<String> openedSince(OpenFds before) {
        List<String> left = new ArrayList<>(before.targets);
        List<String> opened = new ArrayList<>();
        for (String t : targets) {
            if (!left.remove(t)) {
                opened.add(t);
            }
        }
        return opened;
    }
}

package io.cri4j.cri.internal;

import io.grpc.Status;
import java.io.FileNotFoundException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.regex.Pattern;

/**
 * Failures worded for people, in one line: the reason, where Java's message is only a path,
 * empty, or a class name. Not API.
 */
public final class IoErrors {

    /** "java.io.EOFException: " and the like at the start of a message. */
    private static final Pattern CLASS_PREFIX =
            Pattern.compile("^(?:[a-z_$][\\w$]*\\.)+[A-Z][\\w$]*(?:Exception|Error): ");

    private IoErrors() {}

    /**
     * @param e a failure
     * @return why it failed, in words and one line (a {@link FileSystemException} names its file)
     */
    public static String reason(Throwable e) {
        if (e instanceof FileSystemException f) {
            String why = f.getReason();
            if (why == null) {
                if (f instanceof NoSuchFileException) {
                    why = "no such file or directory";
                } else if (f instanceof AccessDeniedException) {
                    why = "permission denied";
                } else if (f instanceof FileAlreadyExistsException) {
                    why = "already exists";
                } else if (f instanceof NotDirectoryException) {
                    why = "not a directory";
                } else if (f instanceof DirectoryNotEmptyException) {
                    why = "directory not empty";
                } else {
                    why = words(f);
                }
            }
            String file = f.getFile();
            String other = f.getOtherFile();
            return (file == null ? "" : file + (other == null ? "" : " -> " + other) + ": ") + why;
        }
        if (e instanceof CharacterCodingException) {
            return "not UTF-8 text";
        }
        if (e instanceof UnresolvedAddressException) {
            return "cannot resolve the host name";
        }
        String m = e.getMessage();
        if (m == null || m.isBlank()) {
            if (e instanceof FileNotFoundException) {
                return "no such file or directory"; // how Netty reports ENOENT on connect
            }
            Throwable c = e.getCause();
            return c != null && c != e ? reason(c) : words(e);
        }
        return oneLine(m);
    }

    /**
     * @param status a gRPC status
     * @return its code, description and the reason of its cause, in one line
     */
    public static String describe(Status status) {
        StringBuilder b = new StringBuilder(status.getCode().toString());
        if (status.getDescription() != null) {
            b.append(": ").append(oneLine(status.getDescription()));
        }
        if (status.getCause() != null) {
            String why = reason(status.getCause());
            if (b.indexOf(why) < 0) {
                b.append(" (").append(why).append(')');
            }
        }
        return b.toString();
    }

    /** The first line of a message, without a leading exception class name. */
    public static String oneLine(String message) {
        String m = message.strip();
        int nl = m.indexOf('\n');
        if (nl >= 0) {
            m = m.substring(0, nl).strip();
        }
        String before;
        do {
            before = m;
            m = CLASS_PREFIX.matcher(m).replaceFirst("");
        } while (!m.equals(before));
        return m;
    }

    /** "UnknownHostException" as "unknown host". */
    private static String words(Throwable e) {
        String n = e.getClass().getSimpleName().replaceAll("(Exception|Error)$", "");
        return n.replaceAll("([a-z])([A-Z])", "$1 $2").toLowerCase(java.util.Locale.ROOT);
    }
}

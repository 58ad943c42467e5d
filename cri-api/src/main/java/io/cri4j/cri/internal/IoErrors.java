package io.cri4j.cri.internal;

import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/** I/O failures worded for people: the reason, where Java's message is only a path. Not API. */
public final class IoErrors {

    private IoErrors() {
    }

    /**
     * @param e an I/O failure
     * @return why it failed, in words (a {@link FileSystemException} names its file)
     */
    public static String reason(Exception e) {
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
                    why = f.getClass().getSimpleName();
                }
            }
            String file = f.getFile();
            String other = f.getOtherFile();
            return (file == null ? "" : file + (other == null ? "" : " -> " + other) + ": ") + why;
        }
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : m;
    }
}

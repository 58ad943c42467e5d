package io.cri4j.cli;

import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends what gRPC and other libraries log through {@code java.util.logging} to SLF4J, so that
 * the CLI's output has one format and one level setting. A record's exception is shown by its
 * message only, unless DEBUG is on for that logger: a user reads a line, not a stack trace.
 */
final class JulLogging extends Handler {

    private JulLogging() {}

    /** Replaces the console handler of java.util.logging's root logger with this bridge. */
    static void toSlf4j() {
        LogManager.getLogManager().reset();
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        root.addHandler(new JulLogging());
        root.setLevel(Level.INFO);
    }

    @Override
    public void publish(LogRecord r) {
        Logger log = LoggerFactory.getLogger(r.getLoggerName() == null ? "jul" : r.getLoggerName());
        int level = r.getLevel().intValue();
        String message = r.getMessage();
        if (r.getParameters() != null && message != null && message.contains("{0")) {
            message = java.text.MessageFormat.format(message, r.getParameters());
        }
        Throwable t = r.getThrown();
        if (level >= Level.SEVERE.intValue()) {
            if (log.isErrorEnabled()) {
                log.error(
                        withCause(message, t, log.isDebugEnabled()),
                        log.isDebugEnabled() ? t : null);
            }
        } else if (level >= Level.WARNING.intValue()) {
            if (log.isWarnEnabled()) {
                log.warn(
                        withCause(message, t, log.isDebugEnabled()),
                        log.isDebugEnabled() ? t : null);
            }
        } else if (level >= Level.INFO.intValue()) {
            if (log.isInfoEnabled()) {
                log.info(
                        withCause(message, t, log.isDebugEnabled()),
                        log.isDebugEnabled() ? t : null);
            }
        } else if (log.isDebugEnabled()) {
            log.debug(message, t);
        }
    }

    private static String withCause(String message, Throwable t, boolean traced) {
        if (t == null || traced) {
            return message;
        }
        return message + ": " + Cri4jCli.describe(t);
    }

    @Override
    public void flush() {
        // SLF4J writes as it goes
    }

    @Override
    public void close() {
        // nothing held
    }
}

package io.cri4j.cli;

import io.cri4j.imagepull.LayerProgress;
import io.cri4j.imagepull.PullJob;
import io.cri4j.imagepull.PullProgress;
import java.io.Console;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/** Draws the bars: redrawn in place on a terminal, a line per visible change otherwise. */
final class PullProgressRenderer {

    /**
     * Whether bars are redrawn in place for a {@code --progress} value: {@code tty} yes, {@code
     * plain} no, {@code auto} when there is a console.
     *
     * @throws CommandLine.ParameterException for any other value
     */
    static boolean redrawn(String progressMode, CommandSpec spec) {
        return switch (progressMode) {
            case "tty" -> true;
            case "plain" -> false;
            case "auto" -> onTerminal();
            default ->
                    throw new CommandLine.ParameterException(
                            spec.commandLine(),
                            "--progress must be auto, tty or plain, not '" + progressMode + "'");
        };
    }

    /**
     * Whether standard input and output are a terminal: System.console() alone says so up to JDK
     * 21; from JDK 22 it returns a console without a terminal too, and Console.isTerminal() tells.
     */
    @SuppressWarnings("SystemConsoleNull") // isTerminal() is asked for below, where the JDK has it
    private static boolean onTerminal() {
        Console console = System.console();
        if (console == null) {
            return false;
        }
        try {
            return (Boolean) Console.class.getMethod("isTerminal").invoke(console);
        } catch (NoSuchMethodException e) {
            return true; // before JDK 22: a console is a terminal
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    private static final int BAR = 24;
    private final PrintWriter out;
    private final boolean tty;
    private final Supplier<List<PullProgress>> pulls;
    private final Map<String, String> lastLine = new HashMap<>();
    private int drawnLines;

    PullProgressRenderer(PrintWriter out, boolean tty, List<PullJob> jobs) {
        this(out, tty, () -> jobs.stream().map(PullJob::progress).toList());
    }

    /** @param pulls the snapshots to draw, one per image, in the order drawn */
    PullProgressRenderer(PrintWriter out, boolean tty, Supplier<List<PullProgress>> pulls) {
        this.out = out;
        this.tty = tty;
        this.pulls = pulls;
    }

    void render(boolean last) {
        List<String> lines = new ArrayList<>();
        for (PullProgress p : pulls.get()) {
            String line = imageLine(p);
            if (tty) {
                lines.add(line);
                if (!p.phase().terminal()) {
                    for (LayerProgress l : p.layers()) {
                        lines.add("  " + layerLine(l));
                    }
                }
            } else {
                // plain: a line when the phase, the attempt or the percent (in 5 % steps) changes
                String key =
                        p.phase()
                                + "/"
                                + p.attempt()
                                + "/"
                                + (p.percent() < 0 ? -1 : p.percent() / 5)
                                + "/"
                                + p.layers().stream().filter(LayerProgress::complete).count();
                if (!key.equals(lastLine.get(p.image()))) {
                    lastLine.put(p.image(), key);
                    out.println(line);
                }
            }
        }
        if (tty) {
            if (drawnLines > 0) {
                out.print("\033[" + drawnLines + "A");
            }
            for (String l : lines) {
                out.print("\033[2K" + l + "\n");
            }
            drawnLines = last ? 0 : lines.size();
        }
        out.flush();
    }

    private static String bar(int percent) {
        if (percent < 0) {
            return "[" + "?".repeat(BAR) + "]";
        }
        int n = percent * BAR / 100;
        return "[" + "#".repeat(n) + ".".repeat(BAR - n) + "]";
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

    private static String imageLine(PullProgress p) {
        String phase = p.phase().name().toLowerCase(Locale.ROOT).replace('_', '-');
        StringBuilder sb = new StringBuilder().append(p.image()).append("  ").append(phase);
        switch (p.phase()) {
            case PULLING -> {
                sb.append("  ")
                        .append(bar(p.percent()))
                        .append(' ')
                        .append(
                                p.percentKnown()
                                        ? String.format(Locale.ROOT, "%3d%%", p.percent())
                                        : "  ?%");
                if (p.bytesTotal() > 0) {
                    sb.append("  ")
                            .append(mib(p.bytesDone()))
                            .append(" / ")
                            .append(mib(p.bytesTotal()));
                }
                if (!p.layers().isEmpty()) {
                    sb.append("  layers ")
                            .append(p.layers().stream().filter(LayerProgress::complete).count())
                            .append('/')
                            .append(p.layers().size());
                }
                if (p.bytesPerSecond() > 0) {
                    sb.append("  ").append(mib((long) p.bytesPerSecond())).append("/s");
                }
                if (p.attempt() > 1) {
                    sb.append("  attempt ").append(p.attempt());
                }
                if (!p.percentKnown() && !p.message().isEmpty()) {
                    sb.append("  (").append(p.message()).append(')');
                }
            }
            case BACKING_OFF -> sb.append("  ").append(p.message());
            case SUCCEEDED -> {
                sb.append("  ").append(bar(100)).append(" 100%");
                if (p.bytesTotal() > 0) {
                    sb.append("  ")
                            .append(mib(p.bytesDone()))
                            .append(" / ")
                            .append(mib(p.bytesTotal()));
                }
            }
            default -> {}
        }
        return sb.toString();
    }

    private static String layerLine(LayerProgress l) {
        int pct = l.total() > 0 ? (int) (l.done() * 100 / l.total()) : l.complete() ? 100 : -1;
        // a digest (sha256:...) is shown as Docker shows layer ids: its first 12 hex digits
        String id =
                l.id().startsWith("sha256:") && l.id().length() >= 19
                        ? l.id().substring(7, 19)
                        : l.id();
        return id
                + "  "
                + bar(pct)
                + "  "
                + (l.total() >= 0 ? mib(l.done()) + " / " + mib(l.total()) : "")
                + "  "
                + l.status();
    }
}

package io.cri4j.testing.fake.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * containerd's filter language (its {@code filters} package), as the content service's {@code List} and
 * {@code ListStatuses} take it: a filter is a comma-separated list of selectors that must all match;
 * several filters match when any does. A selector is {@code fieldpath [op value]} with {@code ==},
 * {@code !=} or {@code ~=} (regular expression), or a field path alone (present). Fields are identifiers or
 * quoted strings separated by {@code .}; values are quoted strings or runs of characters without spaces and
 * commas. Quotes are {@code "}, {@code /} or {@code |}, with Go's escapes.
 */
public final class ContainerdFilter {

    private enum Op {
        PRESENT,
        EQUAL,
        NOT_EQUAL,
        MATCHES
    }

    private record Selector(List<String> path, Op op, String value, Pattern regex) {}

    private final List<List<Selector>> any;

    private ContainerdFilter(List<List<Selector>> any) {
        this.any = any;
    }

    /**
     * Parses filters as containerd's {@code filters.ParseAll} does: none matches everything.
     *
     * @throws IllegalArgumentException naming the position and the problem when one does not parse
     */
    public static ContainerdFilter parseAll(List<String> filters) {
        List<List<Selector>> any = new ArrayList<>();
        for (String f : filters) {
            if (f.isEmpty()) {
                return new ContainerdFilter(List.of()); // an empty filter matches everything
            }
            any.add(new Parser(f).selectors());
        }
        return new ContainerdFilter(any);
    }

    /**
     * @param fields the object's value for a field path, empty when it has none
     * @return whether the object matches
     */
    public boolean matches(Function<List<String>, Optional<String>> fields) {
        if (any.isEmpty()) {
            return true;
        }
        for (List<Selector> all : any) {
            if (all.stream().allMatch(s -> test(s, fields))) {
                return true;
            }
        }
        return false;
    }

    /** A predicate over objects whose fields {@code fields} looks up. */
    public <T> Predicate<T> on(
            java.util.function.BiFunction<T, List<String>, Optional<String>> fields) {
        return t -> matches(path -> fields.apply(t, path));
    }

    private static boolean test(Selector s, Function<List<String>, Optional<String>> fields) {
        Optional<String> v = fields.apply(s.path);
        return switch (s.op) {
            case PRESENT -> v.isPresent();
            case EQUAL -> v.isPresent() && v.get().equals(s.value);
            case NOT_EQUAL -> v.isEmpty() || !v.get().equals(s.value);
            case MATCHES -> v.isPresent() && s.regex.matcher(v.get()).find();
        };
    }

    /** A recursive-descent parser over containerd's grammar. */
    private static final class Parser {
        private final String in;
        private int pos;

        Parser(String in) {
            this.in = in;
        }

        List<Selector> selectors() {
            List<Selector> all = new ArrayList<>();
            all.add(selector());
            skipSpace();
            while (pos < in.length()) {
                if (in.charAt(pos) != ',') {
                    throw error("unexpected input: " + in.charAt(pos));
                }
                pos++;
                all.add(selector());
                skipSpace();
            }
            return all;
        }

        private Selector selector() {
            List<String> path = new ArrayList<>();
            path.add(field());
            skipSpace();
            while (pos < in.length() && in.charAt(pos) == '.') {
                pos++;
                path.add(field());
                skipSpace();
            }
            if (pos >= in.length() || in.charAt(pos) == ',') {
                return new Selector(List.copyOf(path), Op.PRESENT, null, null);
            }
            int start = pos;
            while (pos < in.length() && "=!~".indexOf(in.charAt(pos)) >= 0) {
                pos++;
            }
            Op op =
                    switch (in.substring(start, pos)) {
                        case "==" -> Op.EQUAL;
                        case "!=" -> Op.NOT_EQUAL;
                        case "~=" -> Op.MATCHES;
                        default ->
                                throw error(
                                        start == pos
                                                ? "expected an operator (\"==\"|\"!=\"|\"~=\")"
                                                : "unsupported operator \""
                                                        + in.substring(start, pos)
                                                        + "\"");
                    };
            String value = value();
            Pattern regex = null;
            if (op == Op.MATCHES) {
                try {
                    regex = Pattern.compile(value);
                } catch (PatternSyntaxException e) {
                    throw error("invalid regular expression " + value + ": " + e.getDescription());
                }
            }
            return new Selector(List.copyOf(path), op, value, regex);
        }

        private String field() {
            skipSpace();
            if (pos < in.length() && isQuote(in.charAt(pos))) {
                return quoted();
            }
            int start = pos;
            while (pos < in.length() && isFieldChar(in.charAt(pos))) {
                pos++;
            }
            if (start == pos) {
                throw error("expected field or quoted");
            }
            return in.substring(start, pos);
        }

        private String value() {
            skipSpace();
            if (pos < in.length() && isQuote(in.charAt(pos))) {
                return quoted();
            }
            int start = pos;
            while (pos < in.length()
                    && in.charAt(pos) != ','
                    && !Character.isWhitespace(in.charAt(pos))) {
                pos++;
            }
            if (start == pos) {
                throw error("expected value or quoted");
            }
            return in.substring(start, pos);
        }

        private String quoted() {
            char quote = in.charAt(pos++);
            StringBuilder sb = new StringBuilder();
            while (true) {
                if (pos >= in.length() || in.charAt(pos) == '\n') {
                    throw error("quoted literal not terminated");
                }
                char c = in.charAt(pos++);
                if (c == quote) {
                    return sb.toString();
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                if (pos >= in.length()) {
                    throw error("quoted literal not terminated");
                }
                char e = in.charAt(pos++);
                switch (e) {
                    case 'a' -> sb.append('\u0007');
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'n' -> sb.append('\n');
                    case 'r' -> sb.append('\r');
                    case 't' -> sb.append('\t');
                    case 'v' -> sb.append('\u000b');
                    case 'x' -> sb.appendCodePoint(hex(2));
                    case 'u' -> sb.appendCodePoint(hex(4));
                    case 'U' -> sb.appendCodePoint(hex(8));
                    default -> {
                        if (e == '\\' || e == quote) {
                            sb.append(e);
                        } else {
                            throw error("illegal escape sequence \\" + e);
                        }
                    }
                }
            }
        }

        private int hex(int n) {
            if (pos + n > in.length()) {
                throw error("illegal numeric escape sequence");
            }
            try {
                int v = Integer.parseInt(in.substring(pos, pos + n), 16);
                pos += n;
                return v;
            } catch (NumberFormatException e) {
                throw error("illegal numeric escape sequence");
            }
        }

        private void skipSpace() {
            while (pos < in.length() && Character.isWhitespace(in.charAt(pos))) {
                pos++;
            }
        }

        private static boolean isQuote(char c) {
            return c == '"' || c == '/' || c == '|';
        }

        private static boolean isFieldChar(char c) {
            return c == '-'
                    || c == '_'
                    || (c >= 'a' && c <= 'z')
                    || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9');
        }

        private IllegalArgumentException error(String msg) {
            return new IllegalArgumentException(
                    "parse error: filters: [" + in + "] at " + pos + ": " + msg);
        }
    }
}

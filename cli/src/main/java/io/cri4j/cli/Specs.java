package io.cri4j.cli;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.hook.FailurePolicy;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.IGetter;
import picocli.CommandLine.Model.ISetter;
import picocli.CommandLine.Model.OptionSpec;

/**
 * picocli models written in code for the commands that serve ({@code proxy}, {@code fake-runtime},
 * {@code nri-plugin}): a model read from annotations costs their start more than anything else
 * before they listen (each member's annotations parsed, a proxy class made for each annotation
 * type, all interpreted; BENCHMARKS.md, "Cold start"). The usage help and the messages are the
 * ones the annotations gave.
 */
final class Specs {

    private Specs() {}

    /**
     * The model of a command that runs {@code command}, with {@code -h, --help} and {@code -V,
     * --version} as picocli's standard help options.
     */
    static CommandSpec command(Object command, String name, String description) {
        CommandSpec s = CommandSpec.wrapWithoutInspection(command).name(name);
        s.usageMessage().description(description);
        s.addOption(
                OptionSpec.builder("-h", "--help")
                        .usageHelp(true)
                        .description("Show this help message and exit.")
                        .build());
        s.addOption(
                OptionSpec.builder("-V", "--version")
                        .versionHelp(true)
                        .description("Print version information and exit.")
                        .build());
        return s;
    }

    /**
     * An option of {@code type} whose value picocli hands to {@code set}; {@code get} gives the
     * current one, and what it gives now is the option's initial value. Its parameter label is
     * {@code <label>}, as picocli names a field's.
     */
    static <T> OptionSpec.Builder option(
            String name, Class<T> type, String label, Supplier<T> get, Consumer<T> set) {
        Binding<T> b = new Binding<>(get, set);
        return OptionSpec.builder(name)
                .type(type)
                .paramLabel("<" + label + ">")
                .initialValue(get.get()) // what picocli resets an option that is not given to
                .getter(b)
                .setter(b);
    }

    /** A repeatable option of strings, collected into the list {@code get} gives. */
    static OptionSpec.Builder strings(
            String name, String label, Supplier<List<String>> get, Consumer<List<String>> set) {
        Binding<List<String>> b = new Binding<>(get, set);
        return OptionSpec.builder(name)
                .type(List.class)
                .auxiliaryTypes(String.class)
                .paramLabel(label)
                .initialValue(get.get())
                .getter(b)
                .setter(b);
    }

    /**
     * {@code --nri-socket} of a command that serves NRI's runtime side ({@code proxy}, {@code
     * fake-runtime}); {@code description} says what the plugins that connect do there.
     */
    static OptionSpec nriSocket(
            Supplier<CriEndpoint> get, Consumer<CriEndpoint> set, String description) {
        return option("--nri-socket", CriEndpoint.class, "nriSocket", get, set)
                .converters(new EndpointConverter())
                .description(description)
                .build();
    }

    /** {@code --nri-failure-policy} of such a command: Fail or Ignore, Fail by default. */
    static OptionSpec nriFailurePolicy(
            Supplier<FailurePolicy> get, Consumer<FailurePolicy> set, String description) {
        return option("--nri-failure-policy", FailurePolicy.class, "nriFailurePolicy", get, set)
                .defaultValue("Fail")
                .converters(new FailurePolicyConverter())
                .description(description)
                .build();
    }

    /** A field of a command as picocli's getter and setter. */
    private static final class Binding<T> implements IGetter, ISetter {
        private final Supplier<T> get;
        private final Consumer<T> set;

        Binding(Supplier<T> get, Consumer<T> set) {
            this.get = get;
            this.set = set;
        }

        @Override
        @SuppressWarnings({"unchecked", "TypeParameterUnusedInFormals"}) // picocli's signature
        public <V> V get() {
            return (V) get.get();
        }

        @Override
        @SuppressWarnings("unchecked")
        public <V> V set(V value) {
            V old = (V) get.get();
            set.accept((T) value);
            return old;
        }
    }
}

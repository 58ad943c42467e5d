package io.cri4j.testing.real;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.testing.real.internal.Commands;
import io.cri4j.testing.real.internal.Requirements;
import io.cri4j.testing.real.internal.TempDirs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * cri-tools' conformance suite, {@code critest}, run against any CRI runtime and, with {@link
 * Builder#nriSocket}, any NRI host: the suite someone else wrote for what cri4j's fake runtime,
 * proxy and NRI hosts claim to be. Built from cri-tools' main branch with NRI conformance specs
 * ({@code bash ../shared/peers/install-critest.sh} installs it into {@value #BIN_DEFAULT}, {@value
 * #BIN_ENV} names another path). {@link Builder#run()} returns each spec's name and outcome from
 * Ginkgo's JSON report; skips the calling test (fails it when {@code CI=true}) when the binary is
 * missing.
 *
 * <pre>{@code
 * CritestReport r = Critest.builder()
 *         .runtimeEndpoint(containerd.endpoint())
 *         .testImage(busybox.reference())
 *         .nriSocket(containerd.nriSocket())
 *         .focus("NRI")
 *         .run();
 * assertThat(r.failed()).isEmpty();
 * }</pre>
 */
public final class Critest {

    /** Where the binary is looked for unless {@value #BIN_ENV} says otherwise. */
    public static final String BIN_DEFAULT = "/opt/cri4j/critest/bin/critest";

    /** Environment variable naming another {@code critest} binary. */
    public static final String BIN_ENV = "CRI4J_CRITEST";

    private Critest() {}

    /** A new run's configuration. */
    public static Builder builder() {
        return new Builder();
    }

    /** One run of {@code critest}. */
    public static final class Builder {
        private CriEndpoint runtime;
        private CriEndpoint image;
        private String testImage;
        private Path nriSocket;
        private String focus;
        private String skip;
        private Duration timeout = Duration.ofMinutes(10);
        private final List<String> extraArgs = new ArrayList<>();

        private Builder() {}

        /** The runtime's CRI endpoint (required). */
        public Builder runtimeEndpoint(CriEndpoint endpoint) {
            this.runtime = Objects.requireNonNull(endpoint, "endpoint");
            return this;
        }

        /** The image service's endpoint; default the runtime's. */
        public Builder imageEndpoint(CriEndpoint endpoint) {
            this.image = Objects.requireNonNull(endpoint, "endpoint");
            return this;
        }

        /**
         * The image the specs run their containers from (critest's {@code
         * defaultTestContainerImage} and {@code webServerTestImage}), e.g. busybox pushed to a
         * {@link LocalRegistry} (required: these machines reach no public registry).
         */
        public Builder testImage(String reference) {
            this.testImage = Objects.requireNonNull(reference, "reference");
            return this;
        }

        /** The NRI socket of the host under test ({@code -nri-socket}), for the NRI specs. */
        public Builder nriSocket(Path socket) {
            this.nriSocket = Objects.requireNonNull(socket, "socket");
            return this;
        }

        /** Ginkgo's {@code --ginkgo.focus} regular expression. */
        public Builder focus(String regex) {
            this.focus = Objects.requireNonNull(regex, "regex");
            return this;
        }

        /** Ginkgo's {@code --ginkgo.skip} regular expression. */
        public Builder skip(String regex) {
            this.skip = Objects.requireNonNull(regex, "regex");
            return this;
        }

        /** How long the whole run may take; default 10 minutes. */
        public Builder timeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("timeout must be positive");
            }
            this.timeout = timeout;
            return this;
        }

        /** More arguments for {@code critest}, e.g. {@code --ginkgo.flake-attempts=2}. */
        public Builder arg(String arg) {
            extraArgs.add(Objects.requireNonNull(arg, "arg"));
            return this;
        }

        /**
         * Runs the specs and returns their outcomes, whatever they are (a failed spec does not
         * throw).
         *
         * @throws IllegalStateException when critest produced no report (it could not start, or
         *     was killed at the timeout), with its output
         */
        public CritestReport run() {
            Objects.requireNonNull(runtime, "runtimeEndpoint is required");
            Objects.requireNonNull(testImage, "testImage is required");
            Path binary = Path.of(System.getenv().getOrDefault(BIN_ENV, BIN_DEFAULT));
            if (!Files.isExecutable(binary)) {
                Requirements.unavailable(
                        "critest is not installed at "
                                + binary
                                + " (bash ../shared/peers/install-critest.sh installs it, "
                                + ".ci/install-test-deps.sh runs that; "
                                + BIN_ENV
                                + " names another path)");
            }
            Path dir = TempDirs.create("cri4j-critest-");
            try {
                Path images = dir.resolve("images.yaml");
                Files.writeString(
                        images,
                        "defaultTestContainerImage: "
                                + testImage
                                + "\nwebServerTestImage: "
                                + testImage
                                + "\n");
                Path report = dir.resolve("report.json");
                List<String> cmd = new ArrayList<>();
                cmd.add(binary.toString());
                cmd.add("--runtime-endpoint=" + runtime);
                cmd.add("--image-endpoint=" + (image == null ? runtime : image));
                cmd.add("--test-images-file=" + images);
                if (nriSocket != null) {
                    cmd.add("-nri-socket=" + nriSocket);
                }
                if (focus != null) {
                    cmd.add("--ginkgo.focus=" + focus);
                }
                if (skip != null) {
                    cmd.add("--ginkgo.skip=" + skip);
                }
                cmd.add("--ginkgo.no-color");
                cmd.add("--ginkgo.json-report=" + report);
                cmd.addAll(extraArgs);
                Commands.Result result = Commands.exec(timeout, dir, Map.of(), cmd);
                if (!Files.exists(report)) {
                    throw new IllegalStateException(
                            "critest wrote no report (exit "
                                    + result.exitCode()
                                    + "): "
                                    + tail(result.output()));
                }
                return parse(Files.readString(report, StandardCharsets.UTF_8), result.output());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot run critest in " + dir, e);
            } finally {
                TempDirs.deleteRecursively(dir);
            }
        }
    }

    private static String tail(String output) {
        return output.length() <= 8000 ? output : output.substring(output.length() - 8000);
    }

    /** Ginkgo v2's JSON report: an array of suites, each with its {@code SpecReports}. */
    static CritestReport parse(String json, String output) {
        List<CritestReport.Spec> specs = new ArrayList<>();
        for (JsonElement suite : JsonParser.parseString(json).getAsJsonArray()) {
            JsonArray reports = suite.getAsJsonObject().getAsJsonArray("SpecReports");
            if (reports == null) {
                continue;
            }
            for (JsonElement e : reports) {
                JsonObject r = e.getAsJsonObject();
                String type = string(r, "LeafNodeType");
                if (!type.equals("It")) {
                    if (!string(r, "State").equals("passed")
                            && !string(r, "State").equals("skipped")) {
                        // a failed BeforeSuite or AfterEach of the suite: a failure of its own
                        specs.add(
                                new CritestReport.Spec(
                                        "[" + type + "]",
                                        string(r, "State"),
                                        failureMessage(r),
                                        0));
                    }
                    continue;
                }
                List<String> names = new ArrayList<>();
                JsonArray hierarchy = r.getAsJsonArray("ContainerHierarchyTexts");
                if (hierarchy != null) {
                    hierarchy.forEach(h -> names.add(h.getAsString()));
                }
                names.add(string(r, "LeafNodeText"));
                long nanos = r.has("RunTime") ? r.get("RunTime").getAsLong() : 0;
                specs.add(
                        new CritestReport.Spec(
                                names.stream()
                                        .filter(n -> !n.isEmpty())
                                        .collect(Collectors.joining(" ")),
                                string(r, "State"),
                                failureMessage(r),
                                nanos / 1_000_000));
            }
        }
        return new CritestReport(specs, output);
    }

    private static String failureMessage(JsonObject r) {
        JsonObject failure = r.getAsJsonObject("Failure");
        return failure == null ? "" : string(failure, "Message");
    }

    private static String string(JsonObject o, String key) {
        JsonElement e = o.get(key);
        return e == null || e.isJsonNull() ? "" : e.getAsString();
    }
}

package io.cri4j.examples.demo;

import io.cri4j.cli.Cri4jCli;

/**
 * The main class of {@code examples/target/cri4j-examples.jar}, which {@code ./cri4j demo} runs:
 * the cri4j command line with the {@code demo} command added, so that the demo agent stays out
 * of the command line's own jar and the agent's image.
 */
public final class DemoCli {

    private DemoCli() {}

    /**
     * Runs the command line and exits with the command's exit code.
     *
     * @param args command-line arguments
     */
    public static void main(String[] args) {
        System.exit(Cri4jCli.run(args, new DemoCommand()));
    }
}

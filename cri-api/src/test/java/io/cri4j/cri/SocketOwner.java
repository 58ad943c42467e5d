package io.cri4j.cri;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A separate process that tries to serve a unix socket: prints {@code serving NAME} or
 * {@code refused MESSAGE} on one line, and serves until its stdin closes.
 */
public final class SocketOwner {
    private SocketOwner() {}

    public static void main(String[] args) throws Exception {
        CriEndpoint endpoint = CriEndpoint.unix(Path.of(args[0]));
        CriServer server =
                CriServer.builder(endpoint)
                        .addService(new CriServerIT.VersionService(args[1]))
                        .build();
        try {
            server.start();
        } catch (IOException e) {
            System.out.println("refused " + e.getMessage());
            System.out.flush();
            System.exit(3);
        }
        System.out.println("serving " + args[1]);
        System.out.flush();
        while (System.in.read() >= 0) {
            // serve until the test closes our stdin
        }
        server.close();
        System.exit(0);
    }
}

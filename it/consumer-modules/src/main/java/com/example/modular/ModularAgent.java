package com.example.modular;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.proxy.CriProxy;

import java.io.IOException;
import java.nio.file.Path;

/** The agent: a CRI proxy on {@code listen} in front of the runtime, with the hooks its modules provide. */
public final class ModularAgent {

    private ModularAgent() {}

    /** Starts the proxy; the caller closes it. */
    public static CriProxy start(Path listen, CriEndpoint runtime) throws IOException {
        return CriProxy.builder()
                .listen(listen)
                .backend(runtime)
                .loadHooks(ModularAgent.class.getClassLoader())
                .build()
                .start();
    }
}

package io.cri4j.streaming.internal.websocket;

import io.cri4j.streaming.internal.io.WriteGate;
import io.netty.util.AttributeKey;

/** Channel attribute holding a connection's {@link WriteGate}. */
public final class GateHolder {
    public static final AttributeKey<WriteGate> KEY = AttributeKey.valueOf("cri4j.writeGate");

    private GateHolder() {}
}

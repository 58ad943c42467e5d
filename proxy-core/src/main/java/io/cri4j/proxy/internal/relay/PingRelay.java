package io.cri4j.proxy.internal.relay;

import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * The PINGs between one client connection and its backend legs.
 *
 * <p>The runtime's PINGs go on to the client and the client's ack comes back, as without the
 * proxy: the runtime's BDP and keepalive pings measure the client's round trip, and the client
 * acks once it has taken the answer the PING came with (an ack from the proxy would wake the
 * runtime while the client still works on that answer).
 *
 * <p>The client's PINGs go on to the runtime too, with the request they came with, so the runtime
 * acks them with its answer as it would without the proxy (an ack from the proxy would be a write
 * of its own, and a wake-up of the client, before the request even reached the runtime), but only
 * while the runtime sent HEADERS or DATA since the last one: grpc-go and grpc-java servers count a
 * PING that follows no data of their own as a strike and end the connection after a few, and a
 * gRPC client's BDP ping after an answer the proxy made itself would be one. Other client PINGs,
 * and any beyond {@link #MAX_FORWARDED_PINGS} waiting for either peer, the proxy acks itself; so
 * it does for the client's PINGs a backend leg took with it when it went away.
 */
final class PingRelay {
    /** Most PINGs that may wait for the other peer's ack, each way; beyond, the proxy acks. */
    static final int MAX_FORWARDED_PINGS = 8;

    /** A PING sent on between the client and a backend leg: that leg, its payload. */
    private record Forwarded(BackendLeg leg, long data) {}

    private final RelayConnection conn;
    private final FrameWriter client;

    /** PINGs a backend leg sent that went on to the client, waiting for the client's ack. */
    private final ArrayDeque<Forwarded> toClient = new ArrayDeque<>(2);

    /** The client's PINGs sent on to a backend leg, waiting for its ack. */
    private final ArrayDeque<Forwarded> toBackend = new ArrayDeque<>(2);

    /** @param client writes the client leg's frames */
    PingRelay(RelayConnection conn, FrameWriter client) {
        this.conn = conn;
        this.client = client;
    }

    /** A client PING: sent on to the current backend leg, or acked here. */
    void fromClient(long data) {
        BackendLeg u = conn.up;
        if (u != null
                && u.state == BackendLeg.READY
                && u.sentSincePing
                && toBackend.size() < MAX_FORWARDED_PINGS) {
            u.sentSincePing = false;
            toBackend.add(new Forwarded(u, data));
            u.out.ping(data, false);
        } else {
            client.ping(data, true);
        }
    }

    /** The client's ack: goes back to the backend leg whose PING it answers, if still there. */
    void ackFromClient(long data) {
        Forwarded f = take(toClient, null, data);
        if (f == null) {
            return; // an ack to a PING nobody waits for any more: dropped
        }
        BackendLeg u = f.leg();
        if (u.state != BackendLeg.CLOSED) {
            u.out.ping(data, true);
            if (!conn.flushAllReaches(u)) {
                u.out.flush();
            }
        }
    }

    /** A PING of backend leg {@code leg}: sent on to the client, or acked here. */
    void fromBackend(BackendLeg leg, long data) {
        if (toClient.size() < MAX_FORWARDED_PINGS) {
            toClient.add(new Forwarded(leg, data));
            client.ping(data, false);
        } else {
            leg.out.ping(data, true);
        }
    }

    /** An ack of backend leg {@code leg}: goes back to the client if it answers the client's. */
    void ackFromBackend(BackendLeg leg, long data) {
        if (take(toBackend, leg, data) != null) {
            client.ping(data, true);
        } // else an ack to a PING the proxy did not send on: dropped
    }

    /**
     * Backend leg {@code leg} is gone: the client's acks to its PINGs go nowhere, and the client's
     * PINGs it took with it are acked here (the client's connection is still alive).
     */
    void forget(BackendLeg leg) {
        toClient.removeIf(f -> f.leg() == leg);
        for (Iterator<Forwarded> i = toBackend.iterator(); i.hasNext(); ) {
            Forwarded f = i.next();
            if (f.leg() == leg) {
                i.remove();
                client.ping(f.data(), true);
            }
        }
    }

    /**
     * Takes the first PING of {@code waiting} an ack with {@code data} answers, sent on with
     * {@code leg} (null: with any leg); null when none waits.
     */
    private static Forwarded take(ArrayDeque<Forwarded> waiting, BackendLeg leg, long data) {
        for (Iterator<Forwarded> i = waiting.iterator(); i.hasNext(); ) {
            Forwarded f = i.next();
            if (f.data() == data && (leg == null || f.leg() == leg)) {
                i.remove();
                return f;
            }
        }
        return null;
    }
}

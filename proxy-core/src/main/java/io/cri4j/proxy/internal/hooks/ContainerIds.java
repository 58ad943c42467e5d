package io.cri4j.proxy.internal.hooks;

import com.google.protobuf.Message;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * The proxy's container ids and the runtime's. The proxy chooses a container's id itself before
 * its {@code CreateContainer} hooks run (a CRI client cannot choose it, and hooks must see the id
 * the container keeps), gives that id to the hooks and the client, and translates it to the
 * runtime's id on the way to the runtime and back. The pair is persisted as the annotation {@link
 * #ANNOTATION} on the container in the runtime and read back from it when the proxy starts. An id
 * the proxy does not know (a container created before the proxy ran or without hooks) is the
 * runtime's and passes unchanged both ways. Thread-safe.
 */
public final class ContainerIds {
    /** The annotation on the runtime's container that holds the proxy's id for it. */
    public static final String ANNOTATION = "io.cri4j.proxy/container-id";

    private static final Pattern ID = Pattern.compile("[0-9a-f]{64}");
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Map<String, String> toBackend = new ConcurrentHashMap<>();
    private final Map<String, String> toClient = new ConcurrentHashMap<>();
    private final Set<String> creating = ConcurrentHashMap.newKeySet();

    /** A new id as containerd makes them: 32 random bytes as 64 lowercase hex digits. */
    public static String newId() {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    /** Whether {@code id} has the form of the proxy's ids (64 lowercase hex digits). */
    public static boolean wellFormed(String id) {
        return id != null && ID.matcher(id).matches();
    }

    /**
     * Container {@code proxyId} is being created: until the runtime's answer names its id, a
     * container or container status the runtime reports with {@code proxyId} in its annotation
     * {@link #ANNOTATION} (an event sent during the creation) teaches the pair.
     */
    public void creating(String proxyId) {
        creating.add(proxyId);
    }

    /** The creation of {@code proxyId} ended (created, or failed). */
    public void createdOrFailed(String proxyId) {
        creating.remove(proxyId);
    }

    /** Records that the proxy's {@code proxyId} is the runtime's {@code backendId}. */
    public void put(String proxyId, String backendId) {
        if (proxyId.equals(backendId)) {
            return;
        }
        String before = toBackend.put(proxyId, backendId);
        if (before != null && !before.equals(backendId)) {
            toClient.remove(before, proxyId);
        }
        toClient.put(backendId, proxyId);
    }

    /** Forgets the container the proxy calls {@code proxyId}. */
    public void remove(String proxyId) {
        String backendId = toBackend.remove(proxyId);
        if (backendId != null) {
            toClient.remove(backendId, proxyId);
        }
    }

    /**
     * The runtime's id for the client's {@code id}: the mapped id, or for a unique prefix of a
     * proxy's id (as containerd resolves a short id) the runtime's id of that container, else
     * {@code id} unchanged.
     */
    public String toBackend(String id) {
        if (id == null || id.isEmpty() || toBackend.isEmpty()) {
            return id;
        }
        String mapped = toBackend.get(id);
        if (mapped != null) {
            return mapped;
        }
        if (id.length() >= 64) {
            return id;
        }
        String found = null;
        for (Map.Entry<String, String> e : toBackend.entrySet()) {
            if (e.getKey().startsWith(id)) {
                if (found != null) {
                    return id; // ambiguous: the runtime answers for it
                }
                found = e.getValue();
            }
        }
        return found != null ? found : id;
    }

    /** The client's id for the runtime's {@code id}: the proxy's id, else {@code id} unchanged. */
    public String toClient(String id) {
        if (id == null || id.isEmpty() || toClient.isEmpty()) {
            return id;
        }
        return toClient.getOrDefault(id, id);
    }

    /** Whether no container has an id of the proxy's (translation is the identity). */
    public boolean isEmpty() {
        return toBackend.isEmpty();
    }

    /** How many containers have an id of the proxy's. */
    public int size() {
        return toBackend.size();
    }

    // ---------------------------------------------------------------- messages

    /**
     * {@code request} with every container id in it (any depth) as the runtime knows it; the same
     * instance when nothing changes.
     */
    @SuppressWarnings("unchecked")
    public <M> M requestToBackend(M request) {
        if (isEmpty() || !(request instanceof Message m)) {
            return request;
        }
        return (M) ContainerIdFields.translate(m, this::toBackend, null);
    }

    /**
     * {@code response} with every container id in it (any depth) as the client knows it, and
     * without the proxy's annotation; the same instance when nothing changes.
     */
    @SuppressWarnings("unchecked")
    public <M> M responseToClient(M response) {
        if (!(response instanceof Message m)) {
            return response;
        }
        if (!creating.isEmpty()) {
            ContainerIdFields.annotated(m, ANNOTATION, this::learn);
        }
        if (isEmpty()) {
            return response;
        }
        return (M) ContainerIdFields.translate(m, this::toClient, ANNOTATION);
    }

    /** Learns the pair of a container being created from its annotation. */
    private void learn(String proxyId, String backendId) {
        if (proxyId != null
                && !backendId.isEmpty()
                && creating.contains(proxyId)
                && !toBackend.containsKey(proxyId)) {
            put(proxyId, backendId);
        }
    }

    /** Whether messages of {@code prototype}'s type (either CRI version) can hold a container id. */
    public static boolean carriesContainerIds(Object prototype) {
        return ContainerIdFields.carries(prototype);
    }
}

package io.cri4j.nri.internal;

import com.google.protobuf.CodedOutputStream;
import io.cri4j.nri.api.Container;
import io.cri4j.nri.api.PodSandbox;
import io.cri4j.nri.api.SynchronizeRequest;
import java.util.ArrayList;
import java.util.List;

/**
 * Cuts a runtime's state into {@code Synchronize} messages that each fit in one ttrpc message,
 * as NRI v0.12 does for a large state: every message but the last has {@code more = true}, pods
 * come before containers, and the order of each list is kept. A state that fits is one message.
 * Where upstream shrinks the message after its ttrpc refused it, this measures each pod and
 * container and packs them up to the limit, so no message is ever refused.
 */
public final class SyncSplitter {

    /**
     * The room the {@code ttrpc.Request} around a {@code Synchronize} payload takes: service and
     * method names, the payload's tag and length, {@code timeout_nano}; with margin.
     */
    static final int REQUEST_OVERHEAD = 128;

    /** The largest {@code SynchronizeRequest} that fits in one ttrpc message. */
    public static final int MAX_MESSAGE = TtrpcFrame.MAX_DATA_LENGTH - REQUEST_OVERHEAD;

    private SyncSplitter() {}

    /**
     * The messages carrying {@code pods} and {@code containers}.
     *
     * @param limit the largest serialized message, {@link #MAX_MESSAGE} on the wire
     * @throws IllegalArgumentException naming the pod or container that does not fit in a message
     *     of its own
     */
    public static List<SynchronizeRequest> split(
            List<PodSandbox> pods, List<Container> containers, int limit) {
        List<SynchronizeRequest> out = new ArrayList<>();
        SynchronizeRequest.Builder current = SynchronizeRequest.newBuilder();
        // room for more = true, which every message but the last carries
        long size = CodedOutputStream.computeBoolSize(SynchronizeRequest.MORE_FIELD_NUMBER, true);
        for (PodSandbox p : pods) {
            long s = CodedOutputStream.computeMessageSize(SynchronizeRequest.PODS_FIELD_NUMBER, p);
            check(s, limit, "pod " + p.getNamespace() + "/" + p.getName() + " (" + p.getId() + ")");
            if (size + s > limit) {
                out.add(current.setMore(true).build());
                current = SynchronizeRequest.newBuilder();
                size =
                        CodedOutputStream.computeBoolSize(
                                SynchronizeRequest.MORE_FIELD_NUMBER, true);
            }
            current.addPods(p);
            size += s;
        }
        for (Container c : containers) {
            long s =
                    CodedOutputStream.computeMessageSize(
                            SynchronizeRequest.CONTAINERS_FIELD_NUMBER, c);
            check(s, limit, "container " + c.getName() + " (" + c.getId() + ")");
            if (size + s > limit) {
                out.add(current.setMore(true).build());
                current = SynchronizeRequest.newBuilder();
                size =
                        CodedOutputStream.computeBoolSize(
                                SynchronizeRequest.MORE_FIELD_NUMBER, true);
            }
            current.addContainers(c);
            size += s;
        }
        out.add(current.build());
        return out;
    }

    private static void check(long itemSize, long limit, String what) {
        if (itemSize + CodedOutputStream.computeBoolSize(SynchronizeRequest.MORE_FIELD_NUMBER, true)
                > limit) {
            throw new IllegalArgumentException(
                    what
                            + " alone takes "
                            + itemSize
                            + " bytes, more "
                            + "than one Synchronize message can carry within ttrpc's maximum message size of "
                            + TtrpcFrame.MAX_DATA_LENGTH
                            + " bytes");
        }
    }
}

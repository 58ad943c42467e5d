package io.cri4j.nri.internal.host;

import com.google.protobuf.CodedOutputStream;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.SynchronizeRequest;
import io.cri4j.nri.internal.ttrpc.TtrpcFrame;
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
        Messages m = new Messages(limit);
        for (PodSandbox p : pods) {
            m.room(
                    CodedOutputStream.computeMessageSize(SynchronizeRequest.PODS_FIELD_NUMBER, p),
                    "pod " + p.getNamespace() + "/" + p.getName() + " (" + p.getId() + ")");
            m.current.addPods(p);
        }
        for (Container c : containers) {
            m.room(
                    CodedOutputStream.computeMessageSize(
                            SynchronizeRequest.CONTAINERS_FIELD_NUMBER, c),
                    "container " + c.getName() + " (" + c.getId() + ")");
            m.current.addContainers(c);
        }
        m.out.add(m.current.build());
        return m.out;
    }

    /** The messages cut so far and the one being filled. */
    private static final class Messages {
        /** What {@code more = true} takes, which every message but the last carries. */
        private static final long MORE =
                CodedOutputStream.computeBoolSize(SynchronizeRequest.MORE_FIELD_NUMBER, true);

        final List<SynchronizeRequest> out = new ArrayList<>();
        final long limit;
        SynchronizeRequest.Builder current = SynchronizeRequest.newBuilder();
        long size = MORE;

        Messages(long limit) {
            this.limit = limit;
        }

        /** Makes room for an item of {@code itemSize} bytes, starting a new message if needed. */
        void room(long itemSize, String what) {
            check(itemSize, limit, what);
            if (size + itemSize > limit) {
                out.add(current.setMore(true).build());
                current = SynchronizeRequest.newBuilder();
                size = MORE;
            }
            size += itemSize;
        }
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

package io.cri4j.proxy.internal.hooks;

import com.google.protobuf.Message;
import io.cri4j.cri.CriConversion;
import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.CheckpointContainerRequest;
import io.cri4j.cri.v1.CheckpointPodRequest;
import io.cri4j.cri.v1.Container;
import io.cri4j.cri.v1.ContainerAttributes;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerFilter;
import io.cri4j.cri.v1.ContainerMetrics;
import io.cri4j.cri.v1.ContainerStats;
import io.cri4j.cri.v1.ContainerStatsFilter;
import io.cri4j.cri.v1.ContainerStatsRequest;
import io.cri4j.cri.v1.ContainerStatsResponse;
import io.cri4j.cri.v1.ContainerStatus;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.LinuxPodSandboxStats;
import io.cri4j.cri.v1.ListContainerStatsRequest;
import io.cri4j.cri.v1.ListContainerStatsResponse;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListContainersResponse;
import io.cri4j.cri.v1.ListPodSandboxMetricsResponse;
import io.cri4j.cri.v1.ListPodSandboxStatsResponse;
import io.cri4j.cri.v1.PodSandboxMetrics;
import io.cri4j.cri.v1.PodSandboxStats;
import io.cri4j.cri.v1.PodSandboxStatsResponse;
import io.cri4j.cri.v1.PodSandboxStatusResponse;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.ReopenContainerLogRequest;
import io.cri4j.cri.v1.RestorePodResponse;
import io.cri4j.cri.v1.RestoredContainer;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StreamContainerStatsRequest;
import io.cri4j.cri.v1.StreamContainerStatsResponse;
import io.cri4j.cri.v1.StreamContainersRequest;
import io.cri4j.cri.v1.StreamContainersResponse;
import io.cri4j.cri.v1.StreamPodSandboxMetricsResponse;
import io.cri4j.cri.v1.StreamPodSandboxStatsResponse;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.cri.v1.WindowsContainerStats;
import io.cri4j.cri.v1.WindowsPodSandboxStats;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * The fields of the CRI messages that hold a container's id, message by message: every field named
 * {@code container_id} or {@code container_ids}, and {@code id} of {@link Container}, {@link
 * ContainerStatus}, {@link ContainerAttributes}, {@link ContainerFilter} and {@link
 * ContainerStatsFilter}, at any depth. Written out for {@code runtime.v1} (generated accessors, no
 * protobuf descriptors: the proxy never builds the CRI API's file descriptor for them); a {@code
 * runtime.v1alpha2} message goes through its {@code runtime.v1} counterpart (the same field
 * numbers). ContainerIdsTest checks this list against every field of the proto.
 */
final class ContainerIdFields {
    private ContainerIdFields() {}

    private static final String V1 = "io.cri4j.cri.v1.";
    private static final String V1ALPHA2 = "io.cri4j.cri.v1alpha2.";

    /**
     * The {@code runtime.v1} types that hold a container's id at some depth, by name (a {@code
     * runtime.v1alpha2} type of the same name may lack the field; it is then translated as the
     * identity).
     */
    private static final Set<String> CARRYING =
            Set.of(
                    "AttachRequest",
                    "CheckpointContainerRequest",
                    "CheckpointPodRequest",
                    "Container",
                    "ContainerAttributes",
                    "ContainerEventResponse",
                    "ContainerFilter",
                    "ContainerMetrics",
                    "ContainerStats",
                    "ContainerStatsFilter",
                    "ContainerStatsRequest",
                    "ContainerStatsResponse",
                    "ContainerStatus",
                    "ContainerStatusRequest",
                    "ContainerStatusResponse",
                    "CreateContainerResponse",
                    "ExecRequest",
                    "ExecSyncRequest",
                    "LinuxPodSandboxStats",
                    "ListContainerStatsRequest",
                    "ListContainerStatsResponse",
                    "ListContainersRequest",
                    "ListContainersResponse",
                    "ListPodSandboxMetricsResponse",
                    "ListPodSandboxStatsResponse",
                    "PodSandboxMetrics",
                    "PodSandboxStats",
                    "PodSandboxStatsResponse",
                    "PodSandboxStatusResponse",
                    "RemoveContainerRequest",
                    "ReopenContainerLogRequest",
                    "RestorePodResponse",
                    "RestoredContainer",
                    "StartContainerRequest",
                    "StopContainerRequest",
                    "StreamContainerStatsRequest",
                    "StreamContainerStatsResponse",
                    "StreamContainersRequest",
                    "StreamContainersResponse",
                    "StreamPodSandboxMetricsResponse",
                    "StreamPodSandboxStatsResponse",
                    "UpdateContainerResourcesRequest",
                    "WindowsContainerStats",
                    "WindowsPodSandboxStats");

    /**
     * Whether messages of {@code m}'s type (either CRI version) can hold a container's id. Loads
     * no class.
     */
    static boolean carries(Object m) {
        String n = m.getClass().getName();
        if (n.startsWith(V1)) {
            return CARRYING.contains(n.substring(V1.length()));
        }
        return n.startsWith(V1ALPHA2) && CARRYING.contains(n.substring(V1ALPHA2.length()));
    }

    /** Whether messages of the {@code runtime.v1} type {@code simpleName} can hold a container's id. */
    static boolean carries(String simpleName) {
        return CARRYING.contains(simpleName);
    }

    /**
     * {@code m} with every container id {@code f} changes, and, when {@code strip}, without the
     * annotation {@code strip} names on containers and container statuses; the same instance when
     * nothing changes.
     */
    static Message translate(Message m, UnaryOperator<String> f, String strip) {
        Translation translation = new Translation(f, strip);
        Message t = translation.any(m);
        if (t != null) {
            return t;
        }
        if (m.getClass().getName().startsWith(V1ALPHA2) && carries(m)) {
            Message v1 = CriConversion.toOtherVersion(m);
            Message out = translation.any(v1);
            return out == v1 ? m : CriConversion.convert(out, m.getClass());
        }
        return m;
    }

    /**
     * Calls {@code each} with the value of the annotation {@code key} (null when absent) and the id
     * of every {@code runtime.v1} container and container status in {@code m}.
     */
    static void annotated(Message m, String key, BiConsumer<String, String> each) {
        if (m instanceof Container c) {
            each.accept(c.getAnnotationsMap().get(key), c.getId());
        } else if (m instanceof ContainerStatus s) {
            each.accept(s.getAnnotationsMap().get(key), s.getId());
        } else if (m instanceof ListContainersResponse r) {
            r.getContainersList().forEach(c -> annotated(c, key, each));
        } else if (m instanceof StreamContainersResponse r) {
            r.getContainersList().forEach(c -> annotated(c, key, each));
        } else if (m instanceof ContainerStatusResponse r) {
            if (r.hasStatus()) {
                annotated(r.getStatus(), key, each);
            }
        } else if (m instanceof ContainerEventResponse r) {
            r.getContainersStatusesList().forEach(s -> annotated(s, key, each));
        } else if (m instanceof PodSandboxStatusResponse r) {
            r.getContainersStatusesList().forEach(s -> annotated(s, key, each));
        }
    }

    /** One translation: {@link #any} answers {@code null} for a type that is not listed. */
    private record Translation(UnaryOperator<String> f, String strip) {
        Message any(Message m) {
            // requests and answers with a container_id of their own
            if (m instanceof AttachRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof CheckpointContainerRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof ContainerStatsRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof ContainerStatusRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof CreateContainerResponse r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof ExecRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof ExecSyncRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof RemoveContainerRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof ReopenContainerLogRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof StartContainerRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof StopContainerRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof UpdateContainerResourcesRequest r) {
                return id(r, r.getContainerId(), v -> r.toBuilder().setContainerId(v).build());
            }
            if (m instanceof CheckpointPodRequest r) {
                List<String> ids = list(r.getContainerIdsList(), f);
                return ids == null
                        ? r
                        : r.toBuilder().clearContainerIds().addAllContainerIds(ids).build();
            }
            // filters
            if (m instanceof ListContainersRequest r) {
                return r.hasFilter() ? field(r, r.getFilter(), v -> r.toBuilder().setFilter(v)) : r;
            }
            if (m instanceof StreamContainersRequest r) {
                return r.hasFilter() ? field(r, r.getFilter(), v -> r.toBuilder().setFilter(v)) : r;
            }
            if (m instanceof ListContainerStatsRequest r) {
                return r.hasFilter() ? field(r, r.getFilter(), v -> r.toBuilder().setFilter(v)) : r;
            }
            if (m instanceof StreamContainerStatsRequest r) {
                return r.hasFilter() ? field(r, r.getFilter(), v -> r.toBuilder().setFilter(v)) : r;
            }
            // containers and their statuses
            if (m instanceof ListContainersResponse r) {
                List<Container> c = list(r.getContainersList(), this::container);
                return c == null ? r : r.toBuilder().clearContainers().addAllContainers(c).build();
            }
            if (m instanceof StreamContainersResponse r) {
                List<Container> c = list(r.getContainersList(), this::container);
                return c == null ? r : r.toBuilder().clearContainers().addAllContainers(c).build();
            }
            if (m instanceof ContainerStatusResponse r) {
                return r.hasStatus() ? field(r, r.getStatus(), v -> r.toBuilder().setStatus(v)) : r;
            }
            if (m instanceof PodSandboxStatusResponse r) {
                List<ContainerStatus> s = list(r.getContainersStatusesList(), this::status);
                return s == null
                        ? r
                        : r.toBuilder()
                                .clearContainersStatuses()
                                .addAllContainersStatuses(s)
                                .build();
            }
            if (m instanceof ContainerEventResponse r) {
                String id = f.apply(r.getContainerId());
                List<ContainerStatus> s = list(r.getContainersStatusesList(), this::status);
                if (s == null && id.equals(r.getContainerId())) {
                    return r;
                }
                ContainerEventResponse.Builder b = r.toBuilder().setContainerId(id);
                if (s != null) {
                    b.clearContainersStatuses().addAllContainersStatuses(s);
                }
                return b.build();
            }
            if (m instanceof RestorePodResponse r) {
                List<RestoredContainer> c = list(r.getRestoredContainersList(), this::restored);
                return c == null
                        ? r
                        : r.toBuilder()
                                .clearRestoredContainers()
                                .addAllRestoredContainers(c)
                                .build();
            }
            // statistics and metrics
            if (m instanceof ContainerStatsResponse r) {
                return r.hasStats() ? field(r, r.getStats(), v -> r.toBuilder().setStats(v)) : r;
            }
            if (m instanceof ListContainerStatsResponse r) {
                List<ContainerStats> s = list(r.getStatsList(), this::stats);
                return s == null ? r : r.toBuilder().clearStats().addAllStats(s).build();
            }
            if (m instanceof StreamContainerStatsResponse r) {
                List<ContainerStats> s = list(r.getContainerStatsList(), this::stats);
                return s == null
                        ? r
                        : r.toBuilder().clearContainerStats().addAllContainerStats(s).build();
            }
            if (m instanceof PodSandboxStatsResponse r) {
                return r.hasStats() ? field(r, r.getStats(), v -> r.toBuilder().setStats(v)) : r;
            }
            if (m instanceof ListPodSandboxStatsResponse r) {
                List<PodSandboxStats> s = list(r.getStatsList(), this::podStats);
                return s == null ? r : r.toBuilder().clearStats().addAllStats(s).build();
            }
            if (m instanceof StreamPodSandboxStatsResponse r) {
                List<PodSandboxStats> s = list(r.getPodSandboxStatsList(), this::podStats);
                return s == null
                        ? r
                        : r.toBuilder().clearPodSandboxStats().addAllPodSandboxStats(s).build();
            }
            if (m instanceof ListPodSandboxMetricsResponse r) {
                List<PodSandboxMetrics> s = list(r.getPodMetricsList(), this::podMetrics);
                return s == null ? r : r.toBuilder().clearPodMetrics().addAllPodMetrics(s).build();
            }
            if (m instanceof StreamPodSandboxMetricsResponse r) {
                List<PodSandboxMetrics> s = list(r.getPodSandboxMetricsList(), this::podMetrics);
                return s == null
                        ? r
                        : r.toBuilder().clearPodSandboxMetrics().addAllPodSandboxMetrics(s).build();
            }
            // the nested types, as a caller may hand one over alone
            if (m instanceof Container c) {
                return container(c);
            }
            if (m instanceof ContainerStatus s) {
                return status(s);
            }
            if (m instanceof ContainerFilter c) {
                return filter(c);
            }
            if (m instanceof ContainerStatsFilter c) {
                return statsFilter(c);
            }
            if (m instanceof ContainerAttributes a) {
                return attributes(a);
            }
            if (m instanceof ContainerStats s) {
                return stats(s);
            }
            if (m instanceof WindowsContainerStats s) {
                return windowsStats(s);
            }
            if (m instanceof PodSandboxStats s) {
                return podStats(s);
            }
            if (m instanceof LinuxPodSandboxStats s) {
                return linuxPodStats(s);
            }
            if (m instanceof WindowsPodSandboxStats s) {
                return windowsPodStats(s);
            }
            if (m instanceof PodSandboxMetrics p) {
                return podMetrics(p);
            }
            if (m instanceof ContainerMetrics c) {
                return metrics(c);
            }
            if (m instanceof RestoredContainer c) {
                return restored(c);
            }
            return null;
        }

        /** A field holding a message: the same {@code m} when the nested message is unchanged. */
        private <M extends Message, N extends Message> M field(
                M m, N nested, Function<N, ? extends Message.Builder> with) {
            @SuppressWarnings("unchecked")
            N t = (N) any(nested);
            @SuppressWarnings("unchecked")
            M out = t == nested ? m : (M) with.apply(t).build();
            return out;
        }

        private <M> M id(M m, String id, Function<String, M> with) {
            String t = f.apply(id);
            return t.equals(id) ? m : with.apply(t);
        }

        private Container container(Container c) {
            Container t = id(c, c.getId(), v -> c.toBuilder().setId(v).build());
            if (strip != null && t.containsAnnotations(strip)) {
                return t.toBuilder().removeAnnotations(strip).build();
            }
            return t;
        }

        private ContainerStatus status(ContainerStatus s) {
            ContainerStatus t = id(s, s.getId(), v -> s.toBuilder().setId(v).build());
            if (strip != null && t.containsAnnotations(strip)) {
                return t.toBuilder().removeAnnotations(strip).build();
            }
            return t;
        }

        private ContainerFilter filter(ContainerFilter c) {
            return id(c, c.getId(), v -> c.toBuilder().setId(v).build());
        }

        private ContainerStatsFilter statsFilter(ContainerStatsFilter c) {
            return id(c, c.getId(), v -> c.toBuilder().setId(v).build());
        }

        private ContainerAttributes attributes(ContainerAttributes a) {
            return id(a, a.getId(), v -> a.toBuilder().setId(v).build());
        }

        private ContainerMetrics metrics(ContainerMetrics c) {
            return id(c, c.getContainerId(), v -> c.toBuilder().setContainerId(v).build());
        }

        private RestoredContainer restored(RestoredContainer c) {
            return id(c, c.getContainerId(), v -> c.toBuilder().setContainerId(v).build());
        }

        private ContainerStats stats(ContainerStats s) {
            return s.hasAttributes()
                    ? field(s, s.getAttributes(), v -> s.toBuilder().setAttributes(v))
                    : s;
        }

        private WindowsContainerStats windowsStats(WindowsContainerStats s) {
            return s.hasAttributes()
                    ? field(s, s.getAttributes(), v -> s.toBuilder().setAttributes(v))
                    : s;
        }

        private PodSandboxStats podStats(PodSandboxStats s) {
            PodSandboxStats t =
                    s.hasLinux() ? field(s, s.getLinux(), v -> s.toBuilder().setLinux(v)) : s;
            return t.hasWindows() ? field(t, t.getWindows(), v -> t.toBuilder().setWindows(v)) : t;
        }

        private LinuxPodSandboxStats linuxPodStats(LinuxPodSandboxStats s) {
            List<ContainerStats> c = list(s.getContainersList(), this::stats);
            return c == null ? s : s.toBuilder().clearContainers().addAllContainers(c).build();
        }

        private WindowsPodSandboxStats windowsPodStats(WindowsPodSandboxStats s) {
            List<WindowsContainerStats> c = list(s.getContainersList(), this::windowsStats);
            return c == null ? s : s.toBuilder().clearContainers().addAllContainers(c).build();
        }

        private PodSandboxMetrics podMetrics(PodSandboxMetrics p) {
            List<ContainerMetrics> c = list(p.getContainerMetricsList(), this::metrics);
            return c == null
                    ? p
                    : p.toBuilder().clearContainerMetrics().addAllContainerMetrics(c).build();
        }

        /** {@code in} with {@code each} applied, or {@code null} when no element changed. */
        private static <E> List<E> list(List<E> in, UnaryOperator<E> each) {
            List<E> out = null;
            for (int i = 0, n = in.size(); i < n; i++) {
                E e = in.get(i);
                E t = each.apply(e);
                if (t != e && !(t instanceof String && t.equals(e))) {
                    if (out == null) {
                        out = new ArrayList<>(in);
                    }
                    out.set(i, t);
                }
            }
            return out;
        }
    }
}

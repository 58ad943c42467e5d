package io.cri4j.hook;

import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import java.time.Duration;
import java.util.Set;

/**
 * A runtime hook: called at named {@link HookPoint}s with Koordinator's
 * {@code runtime.v1alpha1} messages. An in-process hook implements this interface (and may be
 * discovered with {@link java.util.ServiceLoader} through
 * {@code META-INF/services/io.cri4j.hook.RuntimeHook}); a remote hook server is the same
 * interface behind gRPC ({@link RemoteRuntimeHook}), and {@link HookServer} serves any
 * implementation to Koordinator's Go proxy.
 *
 * <p>Responses are merged into the CRI request for pre points; zero values mean "leave as is"
 * (an empty cpuset, a 0 {@code oom_score_adj}, an empty cgroup parent change nothing). Responses
 * of post points are ignored. Methods may block; the dispatcher bounds each call with
 * {@link #timeout()}.
 */
public interface RuntimeHook {

  /** A name for logs and error messages; unique among the hooks of one proxy. */
  String name();

  /**
   * The points this hook wants to be called at. Read, like {@link #index()}, {@link #name()} and
   * {@link #callInline()}, when the dispatcher first sees the hook list this hook is in; a hook
   * that wants other points is a new hook (a new list from the dispatcher's supplier).
   */
  Set<HookPoint> points();

  /** Order among the hooks of one point: lower first; ties ordered by {@link #name()}. */
  default int index() {
    return 0;
  }

  /** What a failure of this hook at a pre point does to the CRI call. */
  default FailurePolicy failurePolicy() {
    return FailurePolicy.IGNORE;
  }

  /** The longest one call of this hook may take (default 2 s). */
  default Duration timeout() {
    return Duration.ofSeconds(2);
  }

  /**
   * Whether this hook never blocks, so that it may be called directly on the thread that handles
   * the CRI call, which may be the proxy's I/O thread (default false). By default a hook runs on a
   * hook thread of its own while the CRI call waits at most {@link #timeout()} for it, then goes
   * on under the hook's failure policy even if the hook never returns. A hook that only computes
   * its answer from the request (no I/O, no waiting on locks, no sleeping) may return true: a
   * call whose hooks all do is then handled without any thread hand-off, tens of microseconds
   * less per call on a small node. Its timeout is checked when it returns (an overrun counts as
   * a failure under its policy); a hook that says it never blocks and then blocks stalls the
   * proxy.
   */
  default boolean callInline() {
    return false;
  }

  /** Called at pod points. The default changes nothing. */
  default PodSandboxHookResponse onPodSandbox(HookPoint point, PodSandboxHookRequest request)
      throws Exception {
    return PodSandboxHookResponse.getDefaultInstance();
  }

  /**
   * Called at container points. The default changes nothing. The request carries the
   * container's environment ({@code container_envs}); environment variables to set go in the
   * response's {@code container_envs} or, in order, in {@link ContainerHookResult#withEnvs}.
   * In-process hooks can also return mounts and devices ({@link ContainerHookResult});
   * Koordinator's wire protocol has no fields for those.
   */
  default ContainerHookResult onContainer(HookPoint point, ContainerResourceHookRequest request)
      throws Exception {
    return ContainerHookResult.of(ContainerResourceHookResponse.getDefaultInstance());
  }
}

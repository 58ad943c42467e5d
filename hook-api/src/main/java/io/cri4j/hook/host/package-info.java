/**
 * For implementers of hosts that see CRI requests (the cri4j CRI proxy, the fake runtime, a
 * custom runtime shim): building NRI's pod and container state from CRI requests ({@link
 * io.cri4j.hook.host.NriFromCri}), applying hooks' merged answers back to CRI requests and
 * reporting what CRI cannot carry ({@link io.cri4j.hook.host.CriAdjuster}, {@link
 * io.cri4j.hook.host.Adjusted}, {@link io.cri4j.hook.host.UnsupportedAdjustment}), and finding
 * host device nodes by number ({@link io.cri4j.hook.host.DeviceNodes}); hooks that come and go
 * while the host runs, such as external NRI plugins ({@link io.cri4j.hook.host.HookProvider},
 * started with the host's {@link io.cri4j.hook.host.HookHost}).
 *
 * <p>A host's {@code CreateContainer} in outline:
 *
 * <pre>{@code
 * PodSandbox pod = NriFromCri.pod(request.getPodSandboxId(), request.getSandboxConfig(), handler);
 * Container ctr = NriFromCri.container(provisionalId, request, DeviceNodes.system());
 * chain.createContainerDetailed(pod, ctr).thenApply(creation -> {
 *   Adjusted<ContainerConfig> adjusted = adjuster.apply(request.getConfig(), creation);
 *   ContainerConfig config = CriAdjuster.enforce(adjusted, HookEvent.CREATE_CONTAINER,
 *       chain::policyOf);
 *   // forward request.toBuilder().setConfig(config), then apply creation.result().updates()
 *   // and evictions to other containers
 *   return config;
 * });
 * }</pre>
 */
package io.cri4j.hook.host;

/**
 * An in-memory fake CRI runtime for tests: {@link io.cri4j.testing.fake.FakeCriServer} serves
 * {@code runtime.v1} and {@code runtime.v1alpha2} on a unix socket (or in-process), records every call
 * ({@link io.cri4j.testing.fake.CallLog}) and injects faults per RPC ({@link io.cri4j.testing.fake.Faults});
 * {@link io.cri4j.testing.fake.FakeCriExtension} runs it for JUnit 5 tests.
 *
 * <pre>{@code
 * @RegisterExtension
 * static FakeCriExtension cri = FakeCriExtension.unixSocket();
 *
 * @Test
 * void restartsCrashedContainers() throws Exception {
 *     String pod = cri.fakeRuntime().runPodSandbox(podConfig);
 *     String c = cri.fakeRuntime().runContainer(pod, containerConfig);
 *     agent.start(cri.endpoint());
 *     cri.fakeRuntime().exitContainer(c, 1);
 *     cri.calls().await("StartContainer", Duration.ofSeconds(5));
 * }
 * }</pre>
 */
package io.cri4j.testing.fake;

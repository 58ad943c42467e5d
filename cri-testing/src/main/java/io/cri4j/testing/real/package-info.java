/**
 * A real-runtime test harness: JUnit 5 extensions that run a private Debian {@code containerd}
 * (with {@code runc}) and a private {@code docker-registry} on loopback, everything in temp dirs,
 * and test images built offline and pushed to that registry.
 *
 * <ul>
 *   <li>{@link io.cri4j.testing.real.ContainerdExtension} / {@link io.cri4j.testing.real.LocalContainerd}:
 *       containerd serving CRI on a unix socket;
 *   <li>{@link io.cri4j.testing.real.DockerdExtension} / {@link io.cri4j.testing.real.LocalDockerd}:
 *       a private dockerd (Debian {@code docker.io}) serving the Engine API on a unix socket;
 *   <li>{@link io.cri4j.testing.real.RegistryExtension} / {@link io.cri4j.testing.real.LocalRegistry}:
 *       the registry, optionally with basic auth, stoppable and restartable;
 *   <li>{@link io.cri4j.testing.real.TestImage} / {@link io.cri4j.testing.real.PushedImage}: the
 *       test images and their digests and sizes in a registry.
 * </ul>
 *
 * <p>Binaries come from Debian packages: {@code containerd runc containernetworking-plugins
 * docker-registry apache2-utils skopeo umoci busybox-static gcc libc6-dev} (see
 * {@code .ci/install-test-deps.sh}); containerd needs root. Where something is missing the tests
 * are skipped with a reason, except with {@code CI=true}, where they fail.
 */
package io.cri4j.testing.real;

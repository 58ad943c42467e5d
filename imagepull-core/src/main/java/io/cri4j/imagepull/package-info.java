/**
 * Image puller for node agents: a pool of pull workers with per-attempt timeouts, exponential
 * back-off, active deadlines and cancellation; live progress (per layer bytes, monotonic percent,
 * rate) as listeners and {@link java.util.concurrent.Flow.Publisher}s; registry credentials from
 * Docker {@code config.json} and Kubernetes {@code dockerconfigjson} secrets; pre-warming sets of
 * images reconciled like OpenKruise's NodeImage.
 *
 * <p>Start with {@link io.cri4j.imagepull.ImagePuller#builder(ImagePullBackend)} and a backend from
 * {@link io.cri4j.imagepull.CriImagePullBackend} (any CRI runtime; byte progress from containerd's
 * content service) or {@link io.cri4j.imagepull.DockerImagePullBackend} (Docker Engine API).
 */
package io.cri4j.imagepull;

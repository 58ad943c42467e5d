/**
 * Implementation of the image puller: the job state machine, worker slots, progress tracking,
 * containerd content-service polling, manifest reading and the unix-socket HTTP client. Not API.
 */
package io.cri4j.imagepull.internal;

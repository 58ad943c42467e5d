/** Image puller with progress (see the image puller issue; not yet implemented). */
package io.cri4j.imagepull;

/** A CRI conformance suite written once and run against any endpoint (the fake, containerd, a proxy). */
package io.cri4j.testing.conformance;

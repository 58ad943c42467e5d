/** Implementation of the fake CRI runtime; not API. */
package io.cri4j.testing.fake.internal;

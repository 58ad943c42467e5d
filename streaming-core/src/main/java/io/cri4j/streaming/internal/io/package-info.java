/**
 * Plumbing between Netty event loops and the blocking streams a runtime or an application uses,
 * shared by every transport and feature: inbound pipes and their connection-wide credit, deferred
 * reader wake-ups, the outbound write gate, the writer threads' allocator, closing connections
 * without losing queued data, and close actions. Not API.
 */
package io.cri4j.streaming.internal.io;

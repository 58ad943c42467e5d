/**
 * The intercepted calls (not API): {@link io.cri4j.proxy.internal.interception.InterceptedService}
 * is the one chain runner, running the interceptors of the calls some interceptor wants, decoded
 * ({@code Messages}), and ending the chain with the call to the backend; an {@link
 * io.cri4j.proxy.internal.interception.InterceptedStream} is one intercepted call on the relay's
 * event loop; {@link io.cri4j.proxy.internal.interception.BackendStatus} says what the client is
 * told when a backend call ends.
 */
package io.cri4j.proxy.internal.interception;

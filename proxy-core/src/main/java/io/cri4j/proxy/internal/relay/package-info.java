/**
 * The proxy's HTTP/2 byte relay (not API): the proxy's sockets ({@link
 * io.cri4j.proxy.internal.relay.ProxyTransport}); per client connection a {@link
 * io.cri4j.proxy.internal.relay.RelayConnection} pairing the client's leg with its own backend
 * leg on one event loop, relaying frames without decoding messages ({@code ClientLeg}, {@code
 * BackendLeg}, {@code FrameWriter}, {@code FlowControl}, {@code HeaderBlocks}, pings), answering
 * itself where gRPC allows ({@code GrpcWire}), collecting the backend's answer to an intercepted
 * call ({@code Capture}), and the relay's metrics ({@link
 * io.cri4j.proxy.internal.relay.RelayMetrics}).
 */
package io.cri4j.proxy.internal.relay;

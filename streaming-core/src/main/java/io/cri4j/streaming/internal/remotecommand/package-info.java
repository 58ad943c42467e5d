/**
 * Exec and attach, both ends (kubelet's {@code streaming/remotecommand}, client-go's
 * {@code tools/remotecommand}).
 *
 * <p>Server: {@link io.cri4j.streaming.internal.remotecommand.SpdyRemoteCommand} (a SPDY stream each
 * for error, stdin, stdout, stderr and, from v3, resize; v5 served as v4) and
 * {@link io.cri4j.streaming.internal.remotecommand.WsRemoteCommand} (WebSocket channels 0 to 4, v5's
 * close signal) collect a {@link io.cri4j.streaming.internal.remotecommand.CommandRequest}'s streams
 * into {@link io.cri4j.streaming.internal.remotecommand.SessionStreams} and run it with
 * {@link io.cri4j.streaming.internal.remotecommand.CommandRunner}; terminal sizes are decoded by
 * {@link io.cri4j.streaming.internal.remotecommand.ResizeDecoder} into a
 * {@link io.cri4j.streaming.internal.remotecommand.SizeQueue}; the result goes to the client as a
 * {@link io.cri4j.streaming.internal.remotecommand.StatusJson}.
 *
 * <p>Client: {@link io.cri4j.streaming.internal.remotecommand.SpdyCommandClient} and
 * {@link io.cri4j.streaming.internal.remotecommand.WsCommandClient} (with {@code WsChannelSplitter},
 * which passes stdout and stderr frames on without copying them), both reading the status with
 * {@code ExitStatus}. Not API.
 */
package io.cri4j.streaming.internal.remotecommand;

package io.cri4j.proxy.internal;

import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.Http2Headers;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A client stream of an intercepted method, answered by the proxy itself: collects the request
 * message on the event loop, runs the interceptor chain on the executor, and writes the response
 * (headers, messages, trailers with the status) back on the event loop. A reset or a closed client
 * connection cancels the chain's context, which cancels the backend call.
 */
final class InterceptedStream {
  private static final StatusException CLIENT_CANCELLED = Status.CANCELLED
      .withDescription("the client cancelled the call or went away").asException();
  private final RelayConnection conn;
  private final int streamId;
  private final MethodDescriptor<?, ?> method;
  private final Http2Headers headers;
  private final InterceptedService service;
  private final int maxMessageSize;
  private ByteBuf body;
  private boolean ended;
  private volatile Context.CancellableContext context;
  private volatile boolean cancelled;

  InterceptedStream(RelayConnection conn, int streamId, MethodDescriptor<?, ?> method,
      Http2Headers headers, InterceptedService service, int maxMessageSize) {
    this.conn = conn;
    this.streamId = streamId;
    this.method = method;
    this.headers = headers;
    this.service = service;
    this.maxMessageSize = maxMessageSize;
  }

  /** Request bytes (on the event loop). */
  void onData(ByteBuf data, boolean endOfStream) {
    if (ended) {
      return;
    }
    if (body == null) {
      body = Unpooled.buffer(Math.min(data.readableBytes() + 64, maxMessageSize + 5));
    }
    if (body.readableBytes() + data.readableBytes() > maxMessageSize + 5L) {
      ended = true;
      body.release();
      body = null;
      answer(Status.RESOURCE_EXHAUSTED.withDescription("request of "
          + method.getFullMethodName() + " is larger than " + maxMessageSize + " bytes"), null);
      return;
    }
    body.writeBytes(data);
    if (endOfStream) {
      onEnd();
    }
  }

  /** The client half-closed (on the event loop): decode the request and run the chain. */
  void onEnd() {
    if (ended) {
      return;
    }
    ended = true;
    ByteBuf b = body;
    body = null;
    byte[] message;
    try {
      message = unframe(b);
    } catch (StatusException e) {
      answer(e.getStatus(), null);
      return;
    } finally {
      if (b != null) {
        b.release();
      }
    }
    long timeout;
    try {
      timeout = GrpcWire.timeoutNanos(headers.get(GrpcWire.GRPC_TIMEOUT));
    } catch (IllegalArgumentException e) {
      answer(Status.INTERNAL.withDescription(e.getMessage()), null);
      return;
    }
    Metadata md = GrpcWire.metadata(headers);
    Context.CancellableContext ctx = timeout >= 0
        ? Context.ROOT.withDeadline(Deadline.after(timeout, TimeUnit.NANOSECONDS),
            conn.eventLoop())
        : Context.ROOT.withCancellation();
    context = ctx;
    if (cancelled) {
      ctx.cancel(CLIENT_CANCELLED);
      return;
    }
    try {
      service.executor().execute(ctx.wrap(() -> run(message, md)));
    } catch (RejectedExecutionException e) {
      ctx.cancel(e);
      answer(Status.UNAVAILABLE.withDescription("the proxy is shutting down"), null);
    }
  }

  /** The client reset the stream or went away. */
  void cancel() {
    cancelled = true;
    ended = true;
    if (body != null) {
      body.release();
      body = null;
    }
    Context.CancellableContext ctx = context;
    if (ctx != null) {
      ctx.cancel(CLIENT_CANCELLED);
    }
  }

  private byte[] unframe(ByteBuf b) throws StatusException {
    if (b == null || b.readableBytes() < 5) {
      throw Status.INTERNAL.withDescription("no request message for "
          + method.getFullMethodName()).asException();
    }
    int flags = b.readUnsignedByte();
    long length = b.readUnsignedInt();
    if (flags != 0) {
      throw Status.UNIMPLEMENTED.withDescription("compressed requests are not accepted for "
          + method.getFullMethodName() + " (the proxy decodes it for its interceptors)")
          .asException();
    }
    if (length != b.readableBytes()) {
      throw Status.INTERNAL.withDescription("expected one request message for "
          + method.getFullMethodName() + " of " + length + " bytes, got "
          + b.readableBytes()).asException();
    }
    byte[] message = new byte[(int) length];
    b.readBytes(message);
    return message;
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private void run(byte[] message, Metadata md) {
    MethodDescriptor m = method;
    Object request;
    try {
      request = m.parseRequest(new ByteArrayInputStream(message));
    } catch (RuntimeException e) {
      answer(Status.INTERNAL.withDescription("cannot parse the request of "
          + m.getFullMethodName() + ": " + e.getMessage()), null);
      return;
    }
    if (m.getType() == MethodDescriptor.MethodType.UNARY) {
      try {
        Object response = service.unary(m, request, md);
        ByteBuf framed = frame(m, response);
        // message and trailers in one event-loop task: one wake-up, one flush
        conn.execute(() -> {
          RelayConnection.Pair p = conn.pair(streamId);
          if (p == null || cancelled) {
            framed.release();
            return;
          }
          conn.sendMessage(p, framed);
          conn.finish(p, Status.OK, null);
        });
      } catch (StatusException e) {
        answer(e.getStatus(), e.getTrailers());
      }
      return;
    }
    service.serverStreaming(m, request, md, new StreamObserver<Object>() {
      @Override
      public void onNext(Object value) {
        send(m, value);
      }

      @Override
      public void onError(Throwable t) {
        Status s = Status.fromThrowable(t);
        answer(s, Status.trailersFromThrowable(t));
      }

      @Override
      public void onCompleted() {
        answer(Status.OK, null);
      }
    });
  }

  /** A response message with gRPC's 5-byte prefix (uncompressed, length). */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private static ByteBuf frame(MethodDescriptor m, Object response) {
    byte[] bytes;
    try (InputStream in = m.streamResponse(response)) {
      bytes = in.readAllBytes();
    } catch (IOException e) {
      throw new StatusRuntimeException(Status.INTERNAL.withCause(e));
    }
    return Unpooled.buffer(5 + bytes.length).writeByte(0).writeInt(bytes.length)
        .writeBytes(bytes);
  }

  @SuppressWarnings("rawtypes")
  private void send(MethodDescriptor m, Object response) {
    ByteBuf framed = frame(m, response);
    conn.execute(() -> {
      RelayConnection.Pair p = conn.pair(streamId);
      if (p == null || cancelled) {
        framed.release();
        return;
      }
      conn.sendMessage(p, framed);
    });
  }

  private void answer(Status status, Metadata trailers) {
    conn.execute(() -> {
      RelayConnection.Pair p = conn.pair(streamId);
      if (p != null && !cancelled) {
        conn.finish(p, status, trailers);
      }
    });
  }
}

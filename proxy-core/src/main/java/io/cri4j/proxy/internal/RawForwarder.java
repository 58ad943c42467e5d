package io.cri4j.proxy.internal;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.HandlerRegistry;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Forwards any call, of any service or method, to the backend as raw message bytes: nothing is
 * decoded. Flow control is end to end (one message requested for each one delivered), so
 * server-streaming and bidirectional calls pass through as well as unary ones.
 */
public final class RawForwarder extends HandlerRegistry {
  /** Passes message bytes through unchanged. */
  public static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          try {
            return stream.readAllBytes();
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };

  private final Channel backend;
  private final ConcurrentMap<String, ServerMethodDefinition<byte[], byte[]>> methods =
      new ConcurrentHashMap<>();

  public RawForwarder(Channel backend) {
    this.backend = backend;
  }

  @Override
  public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
    return methods.computeIfAbsent(methodName, name -> ServerMethodDefinition.create(
        MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.UNKNOWN)
            .setFullMethodName(name)
            .setRequestMarshaller(BYTES)
            .setResponseMarshaller(BYTES)
            .build(),
        new Handler()));
  }

  private final class Handler implements ServerCallHandler<byte[], byte[]> {
    @Override
    public ServerCall.Listener<byte[]> startCall(ServerCall<byte[], byte[]> serverCall,
        Metadata headers) {
      ClientCall<byte[], byte[]> clientCall =
          backend.newCall(serverCall.getMethodDescriptor(), CallOptions.DEFAULT);
      Relay relay = new Relay(serverCall, clientCall);
      clientCall.start(relay.backendListener, headers);
      clientCall.request(1);
      serverCall.request(1);
      return relay.clientListener;
    }
  }

  /**
   * Relays one call. Each side asks the other for the next message only when it can send it
   * on without buffering (isReady), and otherwise waits for its onReady.
   */
  private static final class Relay {
    private final ServerCall<byte[], byte[]> serverCall;
    private final ClientCall<byte[], byte[]> clientCall;
    private boolean headersSent;
    private boolean clientMessagePending;
    private boolean backendMessagePending;

    Relay(ServerCall<byte[], byte[]> serverCall, ClientCall<byte[], byte[]> clientCall) {
      this.serverCall = serverCall;
      this.clientCall = clientCall;
    }

    final ServerCall.Listener<byte[]> clientListener = new ServerCall.Listener<>() {
      @Override
      public void onMessage(byte[] message) {
        clientCall.sendMessage(message);
        synchronized (Relay.this) {
          if (clientCall.isReady()) {
            serverCall.request(1);
          } else {
            clientMessagePending = true;
          }
        }
      }

      @Override
      public void onHalfClose() {
        clientCall.halfClose();
      }

      @Override
      public void onCancel() {
        clientCall.cancel("client cancelled the call", null);
      }

      @Override
      public void onReady() {
        synchronized (Relay.this) {
          if (backendMessagePending) {
            backendMessagePending = false;
            clientCall.request(1);
          }
        }
      }
    };

    final ClientCall.Listener<byte[]> backendListener = new ClientCall.Listener<>() {
      @Override
      public void onHeaders(Metadata headers) {
        synchronized (Relay.this) {
          headersSent = true;
          serverCall.sendHeaders(headers);
        }
      }

      @Override
      public void onMessage(byte[] message) {
        synchronized (Relay.this) {
          if (!headersSent) {
            headersSent = true;
            serverCall.sendHeaders(new Metadata());
          }
          serverCall.sendMessage(message);
          if (serverCall.isReady()) {
            clientCall.request(1);
          } else {
            backendMessagePending = true;
          }
        }
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        synchronized (Relay.this) {
          try {
            serverCall.close(BackendStatus.forClient(status), trailers);
          } catch (IllegalStateException alreadyClosed) {
            // the client went away first
          }
        }
      }

      @Override
      public void onReady() {
        synchronized (Relay.this) {
          if (clientMessagePending) {
            clientMessagePending = false;
            serverCall.request(1);
          }
        }
      }
    };
  }
}

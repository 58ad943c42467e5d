package io.cri4j.proxy.internal.interception;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Messages of intercepted calls to and from gRPC's length-prefixed framing. Protobuf messages
 * are parsed from and written to the bytes directly with their own parser; other marshallers
 * (raw methods) go through their streams.
 */
final class Messages {
    private Messages() {}

    /**
     * Parses {@code length} bytes at {@code index} of {@code b} (gRPC's prefix excluded).
     *
     * @throws IllegalArgumentException when the bytes are not such a message
     */
    static Object parse(
            MethodDescriptor.Marshaller<?> marshaller, ByteBuf b, int index, int length) {
        MessageLite prototype = prototype(marshaller);
        if (prototype != null) {
            try {
                return prototype.getParserForType().parseFrom(b.nioBuffer(index, length));
            } catch (InvalidProtocolBufferException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
        }
        return marshaller.parse(new ByteArrayInputStream(ByteBufUtil.getBytes(b, index, length)));
    }

    /** Parses a whole message; as {@link #parse(MethodDescriptor.Marshaller, ByteBuf, int, int)}. */
    static Object parse(MethodDescriptor.Marshaller<?> marshaller, byte[] message) {
        return parse(marshaller, Unpooled.wrappedBuffer(message), 0, message.length);
    }

    /** {@code value} with gRPC's 5-byte prefix (uncompressed, length). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static ByteBuf frame(MethodDescriptor.Marshaller marshaller, Object value) {
        if (value instanceof MessageLite m && prototype(marshaller) != null) {
            int size = m.getSerializedSize();
            ByteBuf b = Unpooled.buffer(5 + size);
            b.writeByte(0).writeInt(size);
            try {
                CodedOutputStream out =
                        CodedOutputStream.newInstance(
                                b.array(), b.arrayOffset() + b.writerIndex(), size);
                m.writeTo(out);
                out.checkNoSpaceLeft();
            } catch (IOException | RuntimeException e) {
                b.release();
                throw new StatusRuntimeException(
                        Status.INTERNAL
                                .withDescription(
                                        "cannot encode a "
                                                + m.getClass().getSimpleName()
                                                + ": "
                                                + e)
                                .withCause(e));
            }
            return b.writerIndex(5 + size);
        }
        try (InputStream in = marshaller.stream(value)) {
            return frame(in.readAllBytes());
        } catch (IOException e) {
            throw new StatusRuntimeException(Status.INTERNAL.withCause(e));
        }
    }

    /** A message's bytes with gRPC's 5-byte prefix (uncompressed, length). */
    static ByteBuf frame(byte[] message) {
        return Unpooled.buffer(5 + message.length)
                .writeByte(0)
                .writeInt(message.length)
                .writeBytes(message);
    }

    private static MessageLite prototype(MethodDescriptor.Marshaller<?> marshaller) {
        return marshaller instanceof MethodDescriptor.PrototypeMarshaller<?> p
                        && p.getMessagePrototype() instanceof MessageLite m
                ? m
                : null;
    }
}

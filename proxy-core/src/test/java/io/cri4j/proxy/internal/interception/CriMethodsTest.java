package io.cri4j.proxy.internal.interception;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.grpc.MethodDescriptor;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CriMethodsTest {
    private static List<MethodDescriptor<?, ?>> generatedByGrpc() {
        List<MethodDescriptor<?, ?>> all =
                new ArrayList<>(RuntimeServiceGrpc.getServiceDescriptor().getMethods());
        all.addAll(ImageServiceGrpc.getServiceDescriptor().getMethods());
        return all;
    }

    private static String simpleName(MethodDescriptor.Marshaller<?> m) {
        return ((MethodDescriptor.PrototypeMarshaller<?>) m)
                .getMessagePrototype()
                .getClass()
                .getSimpleName();
    }

    @Test
    void theTableIsEveryGeneratedMethodWithItsTypeAndMessages() {
        List<String> table = new ArrayList<>();
        for (CriMethods.Method m : CriMethods.V1) {
            table.add(m.fullName() + " " + m.type() + " " + m.request() + " " + m.response());
        }
        List<String> generated = new ArrayList<>();
        for (MethodDescriptor<?, ?> m : generatedByGrpc()) {
            generated.add(
                    m.getFullMethodName()
                            + " "
                            + m.getType()
                            + " "
                            + simpleName(m.getRequestMarshaller())
                            + " "
                            + simpleName(m.getResponseMarshaller()));
        }
        assertThat(table).containsExactlyInAnyOrderElementsOf(generated);
    }

    @Test
    void generatedIsTheGrpcDescriptorsThemselves() {
        List<MethodDescriptor<?, ?>> byGrpc = generatedByGrpc();
        for (MethodDescriptor<?, ?> m : CriMethods.generated()) {
            assertThat(byGrpc).anySatisfy(g -> assertThat(g).isSameAs(m));
        }
        assertThat(CriMethods.generated()).hasSameSizeAs(byGrpc);
    }

    @Test
    void lazyDescriptorsHaveTheGeneratedNamesTypesAndMessages() {
        List<MethodDescriptor<?, ?>> lazy = CriMethods.lazy();
        assertThat(lazy).hasSameSizeAs(CriMethods.V1);
        for (MethodDescriptor<?, ?> m : lazy) {
            MethodDescriptor<?, ?> g =
                    generatedByGrpc().stream()
                            .filter(x -> x.getFullMethodName().equals(m.getFullMethodName()))
                            .findFirst()
                            .orElseThrow();
            assertThat(m.getType()).isEqualTo(g.getType());
            assertThat(m.getRequestMarshaller())
                    .isInstanceOf(MethodDescriptor.PrototypeMarshaller.class);
            assertThat(
                            ((MethodDescriptor.PrototypeMarshaller<?>) m.getRequestMarshaller())
                                    .getMessagePrototype())
                    .isSameAs(
                            ((MethodDescriptor.PrototypeMarshaller<?>) g.getRequestMarshaller())
                                    .getMessagePrototype());
            assertThat(
                            ((MethodDescriptor.PrototypeMarshaller<?>) m.getResponseMarshaller())
                                    .getMessageClass())
                    .isEqualTo(
                            ((MethodDescriptor.PrototypeMarshaller<?>) g.getResponseMarshaller())
                                    .getMessageClass());
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void aLazyMarshallerWritesAndReadsTheMessage() throws Exception {
        MethodDescriptor<Object, Object> status =
                (MethodDescriptor<Object, Object>)
                        CriMethods.lazy().stream()
                                .filter(m -> m.getBareMethodName().equals("ContainerStatus"))
                                .findFirst()
                                .orElseThrow();
        ContainerStatusRequest req =
                ContainerStatusRequest.newBuilder().setContainerId("c1").setVerbose(true).build();
        byte[] bytes = status.getRequestMarshaller().stream(req).readAllBytes();
        assertThat(bytes).isEqualTo(req.toByteArray());
        Message back =
                (Message)
                        status.getRequestMarshaller()
                                .parse(new java.io.ByteArrayInputStream(bytes));
        assertThat(back).isEqualTo(req);
    }
}

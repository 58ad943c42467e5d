package io.cri4j.cri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.cri4j.cri.v1.CriApiV1;
import io.cri4j.cri.v1alpha2.CriApiV1alpha2;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** One case per request and response type (and every other message) that both CRI versions have. */
class CriConversionTest {

    static Stream<Arguments> sharedTypes() throws Exception {
        List<Arguments> out = new ArrayList<>();
        for (Descriptor d : allMessages(CriApiV1alpha2.getDescriptor().getMessageTypes())) {
            if (d.getOptions().getMapEntry()) {
                continue;
            }
            Class<?> alpha = Class.forName(javaName("io.cri4j.cri.v1alpha2.", d));
            Message alphaProto = (Message) alpha.getMethod("getDefaultInstance").invoke(null);
            if (CriConversion.counterpart(alpha).isPresent()) {
                out.add(
                        Arguments.of(
                                d.getName().equals(d.getFullName())
                                        ? d.getName()
                                        : d.getFullName().substring("runtime.v1alpha2.".length()),
                                alphaProto,
                                CriConversion.counterpart(alpha).orElseThrow()));
            }
        }
        assertThat(out).hasSizeGreaterThan(100);
        return out.stream();
    }

    @Test
    void everyRpcMessageOfV1alpha2HasAV1Counterpart() throws Exception {
        for (var service : CriApiV1alpha2.getDescriptor().getServices()) {
            for (var method : service.getMethods()) {
                for (Descriptor d : List.of(method.getInputType(), method.getOutputType())) {
                    Class<?> alpha = Class.forName(javaName("io.cri4j.cri.v1alpha2.", d));
                    assertThat(CriConversion.counterpart(alpha)).as(d.getFullName()).isPresent();
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("sharedTypes")
    void fullyPopulatedV1alpha2RoundTripsThroughV1(
            String name, Message alphaProto, Message v1Proto) {
        Message alpha = MessageFiller.filled(alphaProto);
        Message v1 = CriConversion.toOtherVersion(alpha);
        assertThat(v1.getDescriptorForType().getFullName()).isEqualTo("runtime.v1." + name);
        // every field the two versions share arrives with the same value
        assertSharedFieldsEqual(alpha, v1);
        Message back = CriConversion.toOtherVersion(v1);
        assertThat(back).isEqualTo(alpha);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("sharedTypes")
    void fullyPopulatedV1RoundTripsThroughV1alpha2(
            String name, Message alphaProto, Message v1Proto) {
        Message v1 = MessageFiller.filled(v1Proto);
        Message alpha = CriConversion.convert(v1, alphaProto.getClass());
        assertSharedFieldsEqual(alpha, v1);
        Message back = CriConversion.convert(alpha, v1Proto.getClass());
        assertThat(back).isEqualTo(v1);
    }

    @Test
    void aTypeWithoutCounterpartIsRejectedByName() {
        Message onlyInV1 =
                io.cri4j.cri.v1.CheckpointPodRequest.newBuilder().setPodSandboxId("p").build();
        assertThatThrownBy(() -> CriConversion.toOtherVersion(onlyInV1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("runtime.v1.CheckpointPodRequest");
    }

    /** Compares, field by field, what both descriptors declare with the same number and name. */
    private static void assertSharedFieldsEqual(Message alpha, Message v1) {
        Descriptor ad = alpha.getDescriptorForType();
        Descriptor vd = v1.getDescriptorForType();
        for (FieldDescriptor af : ad.getFields()) {
            FieldDescriptor vf = vd.findFieldByNumber(af.getNumber());
            if (vf == null || !vf.getName().equals(af.getName())) {
                continue;
            }
            String where = ad.getFullName() + "." + af.getName();
            if (af.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                if (af.isRepeated()) {
                    assertThat(v1.getRepeatedFieldCount(vf))
                            .as(where)
                            .isEqualTo(alpha.getRepeatedFieldCount(af));
                    for (int i = 0; i < alpha.getRepeatedFieldCount(af); i++) {
                        assertSharedFieldsEqual(
                                (Message) alpha.getRepeatedField(af, i),
                                (Message) v1.getRepeatedField(vf, i));
                    }
                } else {
                    assertThat(v1.hasField(vf)).as(where).isEqualTo(alpha.hasField(af));
                    assertSharedFieldsEqual(
                            (Message) alpha.getField(af), (Message) v1.getField(vf));
                }
            } else if (af.getJavaType() == FieldDescriptor.JavaType.ENUM) {
                if (af.isRepeated()) {
                    assertThat(v1.getRepeatedFieldCount(vf))
                            .as(where)
                            .isEqualTo(alpha.getRepeatedFieldCount(af));
                } else {
                    assertThat(
                                    ((com.google.protobuf.Descriptors.EnumValueDescriptor)
                                                    v1.getField(vf))
                                            .getNumber())
                            .as(where)
                            .isEqualTo(
                                    ((com.google.protobuf.Descriptors.EnumValueDescriptor)
                                                    alpha.getField(af))
                                            .getNumber());
                }
            } else if (af.getType() != vf.getType()) {
                // upstream v1 made KeyValue.value bytes where v1alpha2 has string: same wire bytes
                assertThat(utf8(v1.getField(vf))).as(where).isEqualTo(utf8(alpha.getField(af)));
            } else {
                assertThat(v1.getField(vf)).as(where).isEqualTo(alpha.getField(af));
            }
        }
    }

    private static String utf8(Object value) {
        return value instanceof com.google.protobuf.ByteString b
                ? b.toStringUtf8()
                : (String) value;
    }

    private static List<Descriptor> allMessages(List<Descriptor> top) {
        List<Descriptor> out = new ArrayList<>();
        for (Descriptor d : top) {
            out.add(d);
            out.addAll(allMessages(d.getNestedTypes()));
        }
        return out;
    }

    private static String javaName(String pkg, Descriptor d) {
        String rel = d.getFullName().substring(d.getFile().getPackage().length() + 1);
        return pkg + rel.replace('.', '$');
    }

    @SuppressWarnings("unused")
    private static final Class<?> V1_FILE = CriApiV1.class;
}

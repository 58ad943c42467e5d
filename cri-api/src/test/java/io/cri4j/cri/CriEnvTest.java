package io.cri4j.cri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.KeyValue;
import org.junit.jupiter.api.Test;

class CriEnvTest {

    @Test
    void writesTheValueAsUtf8BytesOfFieldTwo() {
        KeyValue kv = CriEnv.of("K", "é");
        // field 1 (key, length-delimited) "K", field 2 (value, length-delimited) C3 A9
        assertThat(kv.toByteArray())
                .containsExactly(0x0a, 0x01, 'K', 0x12, 0x02, 0xc3 - 256, 0xa9 - 256);
        assertThat(CriEnv.value(kv)).isEqualTo("é");
    }

    @Test
    void readsBytesThatAreNotUtf8AsReplacementCharacters() {
        KeyValue kv =
                KeyValue.newBuilder()
                        .setKey("BIN")
                        .setValue(ByteString.copyFrom(new byte[] {'a', (byte) 0xff}))
                        .build();
        assertThat(CriEnv.value(kv)).isEqualTo("a\uFFFD");
    }

    @Test
    void mapsAConfigsVariablesInOrderTheLastOfANameWinning() {
        ContainerConfig config =
                ContainerConfig.newBuilder()
                        .addEnvs(CriEnv.of("B", "1"))
                        .addEnvs(CriEnv.of("A", "2"))
                        .addEnvs(CriEnv.of("B", "3"))
                        .build();
        assertThat(CriEnv.asMap(config)).containsExactly(entry("B", "3"), entry("A", "2"));
    }
}

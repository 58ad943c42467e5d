package io.cri4j.hook.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.host.DeviceNodes.DeviceNode;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DeviceNodesTest {

    @Test
    void findsTheHostsNullDeviceByNumberWithoutDevCharLinks() {
        DeviceNode n = DeviceNodes.system().find("c", 1, 3).orElseThrow();
        assertThat(n.path()).isEqualTo(Path.of("/dev/null"));
        assertThat(n.type()).isEqualTo("c");
        assertThat(n.fileMode()).isEqualTo(0666);
        assertThat(DeviceNodes.system().find("u", 1, 5).orElseThrow().path())
                .isEqualTo(Path.of("/dev/zero"));
        assertThat(DeviceNodes.system().find("c", 1, 3)).isPresent();
        assertThat(DeviceNodes.system().find("p", 1, 3)).isEmpty();
        assertThat(DeviceNodes.system().find("c", 4095, 1048575)).isEmpty();
    }

    @Test
    void statReadsTypeAndNumbersAndRefusesNonDevices(@TempDir Path dir) throws Exception {
        DeviceNode n = DeviceNodes.system().stat(Path.of("/dev/zero")).orElseThrow();
        assertThat(n.major()).isEqualTo(1);
        assertThat(n.minor()).isEqualTo(5);
        Path file = Files.writeString(dir.resolve("f"), "x");
        assertThat(DeviceNodes.system().stat(file)).isEmpty();
        assertThat(DeviceNodes.system().stat(dir.resolve("missing"))).isEmpty();
    }

    @Test
    void prefersUdevsCharLinkWhenThereIsOne(@TempDir Path dev) throws Exception {
        Files.createDirectories(dev.resolve("char"));
        Files.createSymbolicLink(dev.resolve("char/1:3"), Path.of("/dev/null"));
        DeviceNodes nodes = DeviceNodes.under(dev);
        assertThat(nodes.find("c", 1, 3).orElseThrow().path()).isEqualTo(dev.resolve("char/1:3"));
        assertThat(nodes.find("c", 1, 5)).isEmpty();
        Files.delete(dev.resolve("char/1:3"));
    }
}

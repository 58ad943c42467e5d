package io.cri4j.hook.host;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class DevDirectoryTest {

    /** Linux's makedev, written out from its definition in glibc's sys/sysmacros.h. */
    static long makedev(long major, long minor) {
        return ((major & 0xfffL) << 8)
                | ((major & ~0xfffL) << 32)
                | (minor & 0xffL)
                | ((minor & ~0xffL) << 12);
    }

    @Test
    void decodesLinuxDeviceNumbersSmallAndLarge() {
        for (long[] mm :
                new long[][] {
                    {1, 3}, {8, 0}, {259, 1}, {4095, 255}, {4096, 256}, {0xfffff, 0xfffff}
                }) {
            long dev = makedev(mm[0], mm[1]);
            assertThat(DevDirectory.major(dev)).as("major of %s", dev).isEqualTo(mm[0]);
            assertThat(DevDirectory.minor(dev)).as("minor of %s", dev).isEqualTo(mm[1]);
        }
    }
}

package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.streaming.testing.KubeFront;
import io.cri4j.streaming.testing.Kubectl;
import io.cri4j.streaming.testing.TestRuntime;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Real kubectl 1.27 (SPDY only) against our server through the API-server/kubelet front. */
class KubectlSpdyIT {
  static TestRuntime runtime = new TestRuntime();
  static StreamingServer server;
  static KubeFront front;
  static Kubectl kubectl;

  @BeforeAll
  static void start(@TempDir Path tmp) throws Exception {
    Kubectl.requireBinary(Kubectl.DIR.resolve("kubectl.1.27"));
    server = StreamingServer.builder(runtime).build().start();
    front = new KubeFront(server);
    kubectl = Kubectl.version("1.27", front.url(), tmp);
  }

  @AfterAll
  static void stop() throws Exception {
    if (front != null) {
      front.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Test
  void execWithStdinEchoesThroughCat() throws Exception {
    byte[] input = "hello from kubectl\nsecond line\n".getBytes(StandardCharsets.UTF_8);
    Kubectl.Result r = kubectl.run(input, 60, "exec", "-i", "p", "-c", "c", "--", "cat");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).isEqualTo(input);
    assertThat(runtime.execs).contains("ctr-c:cat");
  }

  @Test
  void exitCodesPropagate() throws Exception {
    for (int code : new int[] {0, 1, 42}) {
      Kubectl.Result r = kubectl.run(null, 60, "exec", "p", "--", "exit", Integer.toString(code));
      assertThat(r.exitCode()).as("exit %d: %s", code, r.stderr()).isEqualTo(code);
      if (code != 0) {
        assertThat(r.stderr()).contains("command terminated with exit code " + code);
      }
    }
  }

  @Test
  void largeOutputArrivesCompleteBeforeTheStatus() throws Exception {
    int size = 16 * 1024 * 1024 + 123;
    Kubectl.Result r = kubectl.run(null, 90, "exec", "p", "--", "big", Integer.toString(size));
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout().length).isEqualTo(size);
    byte[] expectStart = "abcdefghijklmnopqrstuvwxyz".getBytes(StandardCharsets.US_ASCII);
    assertThat(Arrays.copyOf(r.stdout(), 26)).isEqualTo(expectStart);
  }

  @Test
  void stderrAndFailures() throws Exception {
    Kubectl.Result r = kubectl.run(null, 60, "exec", "p", "--", "err", "oops");
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.stderr()).contains("oops");
    Kubectl.Result f = kubectl.run(null, 60, "exec", "p", "--", "fail");
    assertThat(f.exitCode()).isNotZero();
    assertThat(f.stderr()).contains("boom");
  }

  @Test
  void attachEchoesStdin() throws Exception {
    byte[] input = "attached input\n".getBytes(StandardCharsets.UTF_8);
    Kubectl.Result r = kubectl.run(input, 60, "attach", "-i", "p", "-c", "c");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.out()).contains("attached input");
    assertThat(runtime.execs).contains("attach:ctr-c");
  }
}

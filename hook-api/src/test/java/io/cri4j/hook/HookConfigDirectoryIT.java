package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Config directory churn on a real file system watched with WatchService. */
class HookConfigDirectoryIT {
  @TempDir Path dir;
  private final LinkedBlockingQueue<HookConfigDirectory.Snapshot> snapshots =
      new LinkedBlockingQueue<>();

  static String config(String socket, String policy, String... points) {
    return "{\"remote-endpoint\": \"" + socket + "\", \"failure-policy\": \"" + policy
        + "\", \"runtime-hooks\": [\"" + String.join("\", \"", points) + "\"]}";
  }

  private HookConfigDirectory.Snapshot await(Predicate<HookConfigDirectory.Snapshot> p)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    HookConfigDirectory.Snapshot last = null;
    while (System.nanoTime() < deadline) {
      HookConfigDirectory.Snapshot s = snapshots.poll(100, TimeUnit.MILLISECONDS);
      if (s != null) {
        last = s;
        if (p.test(s)) {
          return s;
        }
      }
    }
    throw new AssertionError("no snapshot matched within 10 s; last: " + last);
  }

  private static void write(Path f, String text) throws Exception {
    Files.writeString(f, text, StandardCharsets.UTF_8);
  }

  @Test
  void churnEndsInTheStateOfTheLastValidFiles() throws Exception {
    write(dir.resolve("a.json"), config("/run/a.sock", "Fail", "PreRunPodSandbox"));
    try (HookConfigDirectory d = HookConfigDirectory.watch(dir)) {
      d.addListener(snapshots::add);
      assertThat(d.get()).extracting(RuntimeHook::name).containsExactly("a");
      assertThat(d.get().get(0).failurePolicy()).isEqualTo(FailurePolicy.FAIL);

      // add a malformed file: reported, ignored
      write(dir.resolve("b.json"), "{\"remote-endpoint\": ");
      // (a scan may see the file half written first; wait for the final content's error)
      HookConfigDirectory.Snapshot s =
          await(x -> x.errors().getOrDefault("b", "").contains("malformed JSON"));
      assertThat(s.configs()).containsOnlyKeys("a");

      // change a: takes effect
      write(dir.resolve("a.json"), config("/run/a2.sock", "Ignore", "PreCreateContainer"));
      await(x -> x.configs().containsKey("a")
          && x.configs().get("a").remoteEndpoint().equals("/run/a2.sock"));
      assertThat(d.get().get(0).points()).containsExactly(HookPoint.PRE_CREATE_CONTAINER);

      // break a: the last good version stays in force
      write(dir.resolve("a.json"), "[]");
      s = await(x -> x.errors().containsKey("a"));
      assertThat(s.configs().get("a").remoteEndpoint()).isEqualTo("/run/a2.sock");

      // atomic rename of a new file into place (how config managers write)
      Path tmp = dir.resolve(".c.json.tmp");
      write(tmp, config("/run/c.sock", "Fail", "PreStartContainer", "PostStopContainer"));
      Files.move(tmp, dir.resolve("c.json"), StandardCopyOption.ATOMIC_MOVE);
      await(x -> x.configs().containsKey("c"));

      // rename c away to a non-json name: gone
      Files.move(dir.resolve("c.json"), dir.resolve("c.json.disabled"),
          StandardCopyOption.ATOMIC_MOVE);
      await(x -> !x.configs().containsKey("c"));

      // delete a, fix b
      Files.delete(dir.resolve("a.json"));
      write(dir.resolve("b.json"), config("unix:///run/b.sock", "Ignore", "PostStartContainer"));
      s = await(x -> x.configs().keySet().equals(java.util.Set.of("b")) && x.errors().isEmpty());
      assertThat(s.configs().get("b").remoteEndpoint()).isEqualTo("/run/b.sock");
      assertThat(d.get()).extracting(RuntimeHook::name).containsExactly("b");
    }
  }

  @Test
  void closeIsIdempotentAndDropsHooks() throws Exception {
    write(dir.resolve("a.json"), config("/run/a.sock", "Fail", "PreRunPodSandbox"));
    HookConfigDirectory d = HookConfigDirectory.watch(dir);
    assertThat(d.get()).hasSize(1);
    d.close();
    d.close();
    assertThat(d.get()).isEmpty();
  }
}

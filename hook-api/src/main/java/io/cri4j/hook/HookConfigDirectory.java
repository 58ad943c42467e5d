package io.cri4j.hook;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a hook config directory (Koordinator's default {@code /etc/runtime/hookserver.d}) with
 * a {@link WatchService}: every {@code *.json} file is one remote hook. Adding, changing,
 * atomically renaming into place and deleting files take effect without restart. A malformed
 * file is reported (logged and in {@link Snapshot#errors()}) and ignored: if an earlier version
 * of the same file was good, that version stays in force. Acts as the live hook source of a
 * {@link HookDispatcher}. Owns a watch thread and one channel per hook: close it.
 */
public final class HookConfigDirectory implements Supplier<List<RemoteRuntimeHook>>, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HookConfigDirectory.class);

  /** Koordinator's default directory. */
  public static final Path DEFAULT_DIR = Path.of("/etc/runtime/hookserver.d");

  /**
   * The directory's state after a scan.
   *
   * @param generation counts scans, starting at 1
   * @param configs the configs in force, by file name
   * @param errors the problem of each file that failed to parse in this scan, by file name
   */
  public record Snapshot(long generation, Map<String, HookConfig> configs,
      Map<String, String> errors) {
    public Snapshot {
      configs = Map.copyOf(configs);
      errors = Map.copyOf(errors);
    }
  }

  private final Path dir;
  private final WatchService watcher;
  private final Thread thread;
  private final List<Consumer<Snapshot>> listeners = new CopyOnWriteArrayList<>();
  private final Map<String, RemoteRuntimeHook> hooks = new HashMap<>();
  private volatile List<RemoteRuntimeHook> current = List.of();
  private volatile Snapshot snapshot = new Snapshot(0, Map.of(), Map.of());
  private long generation;
  private boolean closed;

  private HookConfigDirectory(Path dir) throws IOException {
    this.dir = dir;
    Files.createDirectories(dir);
    this.watcher = dir.getFileSystem().newWatchService();
    dir.register(watcher, StandardWatchEventKinds.ENTRY_CREATE,
        StandardWatchEventKinds.ENTRY_MODIFY, StandardWatchEventKinds.ENTRY_DELETE);
    rescan();
    this.thread = new Thread(this::watchLoop, "cri4j-hook-config-" + dir.getFileName());
    thread.setDaemon(true);
    thread.start();
  }

  /** Reads {@code dir} (created if missing) and starts watching it. */
  public static HookConfigDirectory watch(Path dir) throws IOException {
    return new HookConfigDirectory(dir);
  }

  /** The directory watched. */
  public Path directory() {
    return dir;
  }

  /** The hooks in force, one per good config file. */
  @Override
  public List<RemoteRuntimeHook> get() {
    return current;
  }

  /** The state after the latest scan. */
  public Snapshot snapshot() {
    return snapshot;
  }

  /** Called after every scan (from the watch thread), and once now with the current state. */
  public void addListener(Consumer<Snapshot> listener) {
    listeners.add(listener);
    listener.accept(snapshot);
  }

  private void watchLoop() {
    try {
      while (true) {
        WatchKey key = watcher.take();
        key.pollEvents(); // every event, overflow included, leads to a full rescan
        rescan();
        if (!key.reset()) {
          LOG.warn("hook config directory {} is gone; keeping the last configuration", dir);
          return;
        }
      }
    } catch (ClosedWatchServiceException | InterruptedException e) {
      // closed
    }
  }

  /** Reads every {@code *.json} file again and swaps the hooks that changed. */
  synchronized void rescan() {
    if (closed) {
      return;
    }
    Map<String, HookConfig> configs = new TreeMap<>();
    Map<String, String> errors = new TreeMap<>();
    List<Path> files = new ArrayList<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*.json")) {
      ds.forEach(files::add);
    } catch (IOException e) {
      LOG.warn("cannot list hook config directory {}: {}", dir, e.toString());
      return;
    }
    for (Path f : files) {
      String file = f.getFileName().toString();
      String name = file.substring(0, file.length() - ".json".length());
      try {
        configs.put(name, HookConfig.parse(name, Files.readString(f, StandardCharsets.UTF_8)));
      } catch (NoSuchFileException gone) {
        // deleted between listing and reading: the next event rescans
      } catch (IOException | IllegalArgumentException e) {
        errors.put(name, e.getMessage());
        RemoteRuntimeHook last = hooks.get(name);
        if (last != null) {
          configs.put(name, last.config());
          LOG.warn("hook config {} is invalid ({}); keeping its last good version", f,
              e.getMessage());
        } else {
          LOG.warn("hook config {} is invalid and ignored: {}", f, e.getMessage());
        }
      }
    }
    for (String gone : new ArrayList<>(hooks.keySet())) {
      if (!configs.containsKey(gone)) {
        hooks.remove(gone).close();
        LOG.info("hook {} removed", gone);
      }
    }
    for (Map.Entry<String, HookConfig> e : configs.entrySet()) {
      RemoteRuntimeHook old = hooks.get(e.getKey());
      if (old == null || !old.config().equals(e.getValue())) {
        hooks.put(e.getKey(), new RemoteRuntimeHook(e.getValue()));
        if (old != null) {
          old.close();
        }
        LOG.info("hook {} {}: {}", e.getKey(), old == null ? "added" : "changed", e.getValue());
      }
    }
    List<RemoteRuntimeHook> list = new ArrayList<>(hooks.values());
    list.sort(Comparator.comparing(RemoteRuntimeHook::name));
    current = List.copyOf(list);
    snapshot = new Snapshot(++generation, configs, errors);
    for (Consumer<Snapshot> l : listeners) {
      try {
        l.accept(snapshot);
      } catch (RuntimeException ex) {
        LOG.warn("hook config listener failed", ex);
      }
    }
  }

  /** Stops watching and closes every hook channel; idempotent. */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      hooks.values().forEach(RemoteRuntimeHook::close);
      hooks.clear();
      current = List.of();
    }
    try {
      watcher.close();
    } catch (IOException ignored) {
      // nothing left to release
    }
    try {
      thread.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

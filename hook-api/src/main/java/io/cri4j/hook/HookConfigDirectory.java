package io.cri4j.hook;

import java.io.IOException;
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
 * of the same file was good, that version stays in force. Only regular files (or links to
 * them) of at most {@link #MAX_FILE_BYTES} are read; a FIFO, device, directory or larger file
 * is reported like a malformed one, and no file can block the watch thread. Acts as the live
 * hook source of a {@link HookDispatcher}. Owns a watch thread, a reader thread and one channel per hook: close it.
 */
public final class HookConfigDirectory implements Supplier<List<RemoteRuntimeHook>>, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HookConfigDirectory.class);

  /** Koordinator's default directory. */
  public static final Path DEFAULT_DIR = Path.of("/etc/runtime/hookserver.d");

  /** The largest config file read (a hook config is a few hundred bytes). */
  public static final int MAX_FILE_BYTES = 64 * 1024;

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
  private final ConfigFileReader reader = new ConfigFileReader();
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
        try {
          rescan();
        } catch (RuntimeException e) {
          LOG.warn("rescanning hook config directory {} failed; the next change rescans", dir, e);
        }
        if (!key.reset()) {
          LOG.warn("hook config directory {} is gone; keeping the last configuration", dir);
          return;
        }
      }
    } catch (ClosedWatchServiceException | InterruptedException e) {
      // closed
    }
  }

  /** One file's content as read, or the problem that kept it from being read. */
  private record Read(String name, Path file, String text, String problem) {}

  /**
   * Reads every {@code *.json} file again (no lock held: reading is I/O) and swaps the hooks
   * that changed.
   */
  void rescan() {
    List<Path> files = new ArrayList<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*.json")) {
      ds.forEach(files::add);
    } catch (IOException e) {
      LOG.warn("cannot list hook config directory {}: {}", dir, e.toString());
      return;
    }
    List<Read> reads = new ArrayList<>(files.size());
    for (Path f : files) {
      String file = f.getFileName().toString();
      String name = file.substring(0, file.length() - ".json".length());
      try {
        reads.add(new Read(name, f, reader.read(f), null));
      } catch (NoSuchFileException gone) {
        // deleted between listing and reading: the next event rescans
      } catch (IOException e) {
        reads.add(new Read(name, f, null, e.getMessage()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return; // closing
      }
    }
    apply(reads);
  }

  /** Parses what was read and swaps the hooks that changed. */
  private synchronized void apply(List<Read> reads) {
    if (closed) {
      return;
    }
    Map<String, HookConfig> configs = new TreeMap<>();
    Map<String, String> errors = new TreeMap<>();
    for (Read r : reads) {
      try {
        if (r.problem() != null) {
          throw new IllegalArgumentException(r.problem());
        }
        configs.put(r.name(), HookConfig.parse(r.name(), r.text()));
      } catch (RuntimeException | StackOverflowError e) {
        // nothing a file contains may stop the watcher: every problem is this file's error
        String problem = e instanceof IllegalArgumentException ? e.getMessage()
            : "cannot be parsed: " + e;
        errors.put(r.name(), problem);
        RemoteRuntimeHook last = hooks.get(r.name());
        if (last != null) {
          configs.put(r.name(), last.config());
          LOG.warn("hook config {} is invalid ({}); keeping its last good version", r.file(),
              problem);
        } else {
          LOG.warn("hook config {} is invalid and ignored: {}", r.file(), problem);
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
    thread.interrupt(); // a read in progress gives up at once
    try {
      thread.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    reader.close();
  }
}

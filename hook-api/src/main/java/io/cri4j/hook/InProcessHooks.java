package io.cri4j.hook;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/** Finds in-process {@link RuntimeHook}s with {@link ServiceLoader}. */
public final class InProcessHooks {
  private InProcessHooks() {}

  /**
   * Every {@link RuntimeHook} listed in {@code META-INF/services/io.cri4j.hook.RuntimeHook} on
   * {@code loader}'s class path, instantiated with its public no-argument constructor.
   */
  public static List<RuntimeHook> load(ClassLoader loader) {
    List<RuntimeHook> out = new ArrayList<>();
    for (RuntimeHook h : ServiceLoader.load(RuntimeHook.class, loader)) {
      out.add(h);
    }
    return List.copyOf(out);
  }
}

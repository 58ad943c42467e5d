package io.cri4j.hook;

import io.cri4j.cri.v1.Device;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.Mount;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import java.util.List;
import java.util.Objects;

/**
 * What a hook returns at a container point: Koordinator's response plus, for in-process hooks,
 * environment variables (applied in order: an existing key keeps its position and gets the new
 * value, new keys are appended), mounts and devices (replacing one with the same container path,
 * otherwise appended). The extra lists apply at {@link HookPoint#PRE_CREATE_CONTAINER} only.
 */
public record ContainerHookResult(
    ContainerResourceHookResponse response, List<KeyValue> envs, List<Mount> mounts,
    List<Device> devices) {

  /** Validates and copies the lists. */
  public ContainerHookResult {
    Objects.requireNonNull(response, "response");
    envs = List.copyOf(envs);
    mounts = List.copyOf(mounts);
    devices = List.copyOf(devices);
  }

  /** A result carrying only Koordinator's response. */
  public static ContainerHookResult of(ContainerResourceHookResponse response) {
    return new ContainerHookResult(response, List.of(), List.of(), List.of());
  }

  /** Returns a copy with these environment variables added. */
  public ContainerHookResult withEnvs(List<KeyValue> more) {
    return new ContainerHookResult(response, concat(envs, more), mounts, devices);
  }

  /** Returns a copy with these mounts added. */
  public ContainerHookResult withMounts(List<Mount> more) {
    return new ContainerHookResult(response, envs, concat(mounts, more), devices);
  }

  /** Returns a copy with these devices added. */
  public ContainerHookResult withDevices(List<Device> more) {
    return new ContainerHookResult(response, envs, mounts, concat(devices, more));
  }

  private static <T> List<T> concat(List<T> a, List<T> b) {
    java.util.ArrayList<T> out = new java.util.ArrayList<>(a);
    out.addAll(b);
    return out;
  }
}

package io.cri4j.hook;

import io.cri4j.cri.v1.Device;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.Mount;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import java.util.List;
import java.util.Objects;

/**
 * What a hook returns at a container point: Koordinator's response plus, for in-process hooks,
 * environment variables as an ordered list, mounts and devices (replacing one with the same
 * container path, otherwise appended). Environment variables may come from the response's
 * {@code container_envs} (the wire field a remote hook answers with) and from {@link #envs()};
 * {@link #environment()} is what they add up to. Environment, mounts and devices apply at
 * {@link HookPoint#PRE_CREATE_CONTAINER} only: an existing key keeps its position in the CRI
 * request and takes the new value, new keys are appended.
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

  /**
   * Every environment variable this result sets, in the order it applies them: {@link #envs()}
   * in list order (of a repeated key, the last value), then the keys of the response's
   * {@code container_envs} that the list lacks, sorted by key (a protobuf map has no order on
   * the wire, so a sorted order keeps a remote hook's answer stable). A key in both takes the
   * list's value.
   */
  public List<KeyValue> environment() {
    java.util.Map<String, String> wire = response.getContainerEnvsMap();
    if (wire.isEmpty() && envs.isEmpty()) {
      return List.of();
    }
    java.util.Map<String, KeyValue> out = new java.util.LinkedHashMap<>();
    for (KeyValue kv : envs) {
      out.put(kv.getKey(), kv);
    }
    new java.util.TreeMap<>(wire).forEach((k, v) -> out.putIfAbsent(k, KeyValue.newBuilder()
        .setKey(k).setValue(com.google.protobuf.ByteString.copyFromUtf8(v)).build()));
    return List.copyOf(out.values());
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

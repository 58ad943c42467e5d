package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import io.cri4j.hook.koordinator.v1alpha1.Api;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Our Koordinator proto is wire-identical to upstream's {@code runtime.v1alpha1} api.proto: the
 * facts generated from our descriptors equal the facts taken from upstream (one line per field,
 * map entry, enum value and RPC; see /work/shared/cri-wire-facts/README.md for the format).
 */
class KoordinatorWireFactsTest {

  @Test
  void koordinatorProtoIsWireIdenticalToUpstream() throws IOException {
    List<String> expected;
    try (InputStream in = getClass().getResourceAsStream(
        "/wire-facts/koordinator-runtime-v1alpha1.facts")) {
      expected = Arrays.stream(new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n"))
          .filter(l -> !l.isBlank()).sorted().toList();
    }
    List<String> actual = facts(Api.getDescriptor());
    assertThat(actual).hasSize(75).containsExactlyElementsOf(expected);
  }

  @Test
  void servicePackageAndMethodNamesAreUpstreams() {
    assertThat(io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc.SERVICE_NAME)
        .isEqualTo("runtime.v1alpha1.RuntimeHookService");
    for (HookPoint p : HookPoint.values()) {
      String svc = p.isKoordinator()
          ? io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc.SERVICE_NAME
          : io.cri4j.hook.extended.v1alpha1.ExtendedRuntimeHookServiceGrpc.SERVICE_NAME;
      assertThat(RemoteRuntimeHook.method(p).getFullMethodName())
          .isEqualTo(svc + "/" + p.configName() + "Hook");
    }
  }

  static List<String> facts(FileDescriptor file) {
    List<String> out = new ArrayList<>();
    for (Descriptor d : file.getMessageTypes()) {
      message(d, out);
    }
    for (EnumDescriptor e : file.getEnumTypes()) {
      enumFacts(e, out);
    }
    for (ServiceDescriptor s : file.getServices()) {
      for (MethodDescriptor m : s.getMethods()) {
        out.add("rpc " + s.getFullName() + "/" + m.getName() + " ."
            + m.getInputType().getFullName() + " -> ." + m.getOutputType().getFullName()
            + " cs=" + m.toProto().getClientStreaming() + " ss=" + m.toProto().getServerStreaming());
      }
    }
    out.sort(null);
    return out;
  }

  private static void message(Descriptor d, List<String> out) {
    if (d.getOptions().getMapEntry()) {
      out.add("mapentry " + d.getFullName());
    }
    for (FieldDescriptor f : d.getFields()) {
      StringBuilder sb = new StringBuilder("field ").append(d.getFullName()).append('.')
          .append(f.getName()).append(" = ").append(f.getNumber()).append(' ')
          .append(f.toProto().getLabel().name()).append(' ').append(f.toProto().getType().name());
      if (f.getType() == FieldDescriptor.Type.MESSAGE || f.getType() == FieldDescriptor.Type.ENUM) {
        sb.append(" .").append(f.getType() == FieldDescriptor.Type.MESSAGE
            ? f.getMessageType().getFullName() : f.getEnumType().getFullName());
      }
      if (f.getRealContainingOneof() != null) {
        sb.append(" oneof").append(f.getRealContainingOneof().getIndex());
      }
      out.add(sb.toString());
    }
    for (Descriptor n : d.getNestedTypes()) {
      message(n, out);
    }
    for (EnumDescriptor e : d.getEnumTypes()) {
      enumFacts(e, out);
    }
  }

  private static void enumFacts(EnumDescriptor e, List<String> out) {
    for (EnumValueDescriptor v : e.getValues()) {
      out.add("enum " + e.getFullName() + "." + v.getName() + " = " + v.getNumber());
    }
  }
}

package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.io.File;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The v1alpha2 methods the proxy decodes with the v1 message classes: the same as the v1alpha2
 * service descriptors name, found without loading a v1alpha2 message class.
 */
class V1alpha2MethodsTest {

    /** Full method name to type and the v1 method whose marshallers it carries. */
    private static Map<String, String> describe(
            Collection<MethodDescriptor<?, ?>> methods, Collection<MethodDescriptor<?, ?>> v1) {
        Map<String, MethodDescriptor<?, ?>> byName = new HashMap<>();
        for (MethodDescriptor<?, ?> m : v1) {
            byName.put(m.getBareMethodName(), m);
        }
        Map<String, String> out = new TreeMap<>();
        for (MethodDescriptor<?, ?> m : methods) {
            MethodDescriptor<?, ?> v1m = byName.get(m.getBareMethodName());
            boolean sameMarshallers =
                    v1m != null
                            && m.getRequestMarshaller() == v1m.getRequestMarshaller()
                            && m.getResponseMarshaller() == v1m.getResponseMarshaller();
            out.put(
                    m.getFullMethodName(),
                    m.getType() + (sameMarshallers ? " v1 messages" : " other"));
        }
        return out;
    }

    private static Map<String, String> expected(ServiceDescriptor alpha, ServiceDescriptor v1) {
        Map<String, MethodDescriptor<?, ?>> byName = new HashMap<>();
        for (MethodDescriptor<?, ?> m : v1.getMethods()) {
            byName.put(m.getBareMethodName(), m);
        }
        Map<String, String> out = new TreeMap<>();
        for (MethodDescriptor<?, ?> a : alpha.getMethods()) {
            MethodDescriptor<?, ?> m = byName.get(a.getBareMethodName());
            if (m != null && m.getType() == a.getType()) {
                out.put(a.getFullMethodName(), a.getType() + " v1 messages");
            }
        }
        return out;
    }

    @Test
    void theMethodsOfTheV1alpha2ServicesWithTheirV1Namesakes() {
        Collection<MethodDescriptor<?, ?>> runtime =
                RuntimeServiceGrpc.getServiceDescriptor().getMethods();
        Map<String, String> r =
                describe(
                        CriProxy.asV1alpha2(
                                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.class,
                                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.SERVICE_NAME,
                                runtime),
                        runtime);
        assertThat(r)
                .containsEntry(
                        "runtime.v1alpha2.RuntimeService/CreateContainer", "UNARY v1 messages")
                .isEqualTo(
                        expected(
                                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.getServiceDescriptor(),
                                RuntimeServiceGrpc.getServiceDescriptor()));
        Collection<MethodDescriptor<?, ?>> image =
                ImageServiceGrpc.getServiceDescriptor().getMethods();
        Map<String, String> i =
                describe(
                        CriProxy.asV1alpha2(
                                io.cri4j.cri.v1alpha2.ImageServiceGrpc.class,
                                io.cri4j.cri.v1alpha2.ImageServiceGrpc.SERVICE_NAME,
                                image),
                        image);
        assertThat(i)
                .containsEntry("runtime.v1alpha2.ImageService/PullImage", "UNARY v1 messages")
                .isEqualTo(
                        expected(
                                io.cri4j.cri.v1alpha2.ImageServiceGrpc.getServiceDescriptor(),
                                ImageServiceGrpc.getServiceDescriptor()));
    }

    /** A class loader of its own over the test class path, which tells which classes it loaded. */
    private static final class Isolated extends URLClassLoader {
        Isolated(URL[] urls) {
            super(urls, ClassLoader.getPlatformClassLoader());
        }

        boolean loaded(String name) {
            return findLoadedClass(name) != null;
        }
    }

    @Test
    void loadsNoV1alpha2MessageClass() throws Exception {
        List<URL> urls = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            urls.add(Path.of(e).toUri().toURL());
        }
        try (Isolated l = new Isolated(urls.toArray(URL[]::new))) {
            Object v1 =
                    l.loadClass("io.cri4j.cri.v1.RuntimeServiceGrpc")
                            .getMethod("getServiceDescriptor")
                            .invoke(null);
            Object v1Methods = v1.getClass().getMethod("getMethods").invoke(v1);
            Method asV1alpha2 =
                    l.loadClass(CriProxy.class.getName())
                            .getDeclaredMethod(
                                    "asV1alpha2", Class.class, String.class, Collection.class);
            asV1alpha2.setAccessible(true);
            List<?> methods =
                    (List<?>)
                            asV1alpha2.invoke(
                                    null,
                                    l.loadClass("io.cri4j.cri.v1alpha2.RuntimeServiceGrpc"),
                                    "runtime.v1alpha2.RuntimeService",
                                    v1Methods);
            assertThat(methods).hasSizeGreaterThan(20);
            assertThat(l.loaded("io.cri4j.cri.v1.CreateContainerRequest"))
                    .as("a v1 message class")
                    .isTrue();
            for (String c :
                    List.of(
                            "CreateContainerRequest",
                            "CreateContainerResponse",
                            "VersionRequest",
                            "ListContainerStatsResponse",
                            "PodSandboxConfig")) {
                assertThat(l.loaded("io.cri4j.cri.v1alpha2." + c))
                        .as("v1alpha2 " + c + " loaded")
                        .isFalse();
            }
        }
    }
}

/**
 * A user's node agent as a module: a CRI proxy with a runtime hook it provides as a service, and an
 * NRI plugin. io.cri4j.proxy brings io.cri4j.cri, io.cri4j.hook and io.cri4j.imagepull with it.
 */
module com.example.modular {
    requires io.cri4j.proxy;
    requires io.cri4j.nri;

    provides io.cri4j.hook.Hook with
            com.example.modular.TeamAnnotationHook;
}

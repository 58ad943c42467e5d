/**
 * An example plugin of in-process hooks. On the module path it provides its hooks as services; in a
 * plugin directory or on the class path, {@code META-INF/services} lists the same classes.
 */
module io.cri4j.examples.plugin {
    requires io.cri4j.hook;

    provides io.cri4j.hook.Hook with
            io.cri4j.examples.plugin.OwnerTeamHook;
}

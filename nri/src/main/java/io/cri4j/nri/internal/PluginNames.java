package io.cri4j.nri.internal;

/** NRI's rules for a plugin's name and index, as NRI's stub and containerd check them. */
public final class PluginNames {

    private PluginNames() {}

    /** NRI's rule for plugin names, as the plugin stub checks them: why {@code n} is bad, or null. */
    public static String checkName(String n) {
        if (n.isEmpty()) {
            return "the plugin name is empty";
        }
        for (int i = 0; i < n.length(); i++) {
            char c = n.charAt(i);
            if (!((c >= 'a' && c <= 'z')
                    || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9')
                    || c == '-'
                    || c == '_'
                    || c == '.'
                    || c == '+')) {
                return "invalid plugin name \""
                        + n
                        + "\": contains '"
                        + c
                        + "' (allowed: letters, digits, - _ . +)";
            }
        }
        return null;
    }

    /** NRI's {@code CheckPluginIndex}: two digits. */
    public static String checkIndex(String idx) {
        if (idx.length() != 2 || !idx.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return "invalid plugin index \"" + idx + "\": must be two digits";
        }
        return null;
    }
}

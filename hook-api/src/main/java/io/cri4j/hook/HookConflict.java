package io.cri4j.hook;

/**
 * Two hooks set the same field of one CRI request to different values. The value of the hook
 * called first (lower index) is kept; the later value is dropped, and if the later hook's policy
 * is {@link FailurePolicy#FAIL} the CRI call fails.
 *
 * @param point the hook point
 * @param field the field, e.g. {@code annotations[team]} or {@code linux.resources.cpuset_cpus}
 * @param keptHook the hook whose value stays
 * @param keptValue its value
 * @param droppedHook the hook whose value was dropped
 * @param droppedValue its value
 */
public record HookConflict(HookPoint point, String field, String keptHook, String keptValue,
    String droppedHook, String droppedValue) {

  /** A one-line description for logs and status messages. */
  public String describe() {
    return point.configName() + ": hooks " + keptHook + " and " + droppedHook + " both set "
        + field + " (\"" + keptValue + "\" kept, \"" + droppedValue + "\" dropped)";
  }
}

package io.rebalancelens.agent;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The member state machines and the paths each observation leads along, per group protocol, as the agent spec
 * declares them (consumer_agent/agent-spec-v1.json's member_states and lifecycle, which the Python agent reads too).
 * tests/jvm_agent and the conformance test check the transitions this agent reports against the Python agent's.
 */
final class MemberStates {
    private MemberStates() {}

    /**
     * State paths (entered in order) for each observation; {@code rejoinFrom}: a new assignment there is a rejoin;
     * {@code enteredFrom}: each state's allowed previous states.
     */
    record Lifecycle(List<String> subscribed, List<String> inAssign, List<String> inRevoke, List<String> afterRevoke,
                     List<String> inLost, List<String> afterLost, List<String> stable, List<String> leaveStart,
                     List<String> leaveAfterRevoke, List<String> left, Set<String> rejoinFrom,
                     Map<String, Set<String>> enteredFrom) {
        String initial() {
            return left.get(left.size() - 1);
        }

        boolean allowed(String from, String to) {
            return enteredFrom.getOrDefault(to, Set.of()).contains(from);
        }
    }

    static final Lifecycle CLASSIC = read("classic");
    /** KIP-848, as the Java client's MemberState.java. */
    static final Lifecycle CONSUMER = read("consumer");

    /** The spec's state_transition reasons, by its names for them. */
    static String reason(String name) {
        return AgentSpec.get().reason(name);
    }

    static Lifecycle of(String groupProtocol) {
        return "consumer".equals(groupProtocol) ? CONSUMER : CLASSIC;
    }

    private static Lifecycle read(String protocol) {
        AgentSpec spec = AgentSpec.get();
        return new Lifecycle(spec.path("subscribed", protocol), spec.path("in_assign", protocol),
                spec.path("in_revoke", protocol), spec.path("after_revoke", protocol), spec.path("in_lost", protocol),
                spec.path("after_lost", protocol), spec.path("stable", protocol), spec.path("leave_start", protocol),
                spec.path("leave_after_revoke", protocol), spec.path("left", protocol), spec.rejoinFrom(protocol),
                spec.enteredFrom(protocol));
    }
}

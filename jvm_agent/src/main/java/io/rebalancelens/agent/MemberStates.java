package io.rebalancelens.agent;

import java.util.HashMap;
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
     * State paths (entered in order) for each observation, by the spec's path names ({@code in_assign}: the
     * states a member passes into when its assign callback starts); {@code rejoinFrom}: a new assignment there is a
     * rejoin; {@code enteredFrom}: each state's allowed previous states.
     */
    static final class Lifecycle {
        private final Map<String, List<String>> paths;
        private final Set<String> rejoinFrom;
        private final Map<String, Set<String>> enteredFrom;

        Lifecycle(Map<String, List<String>> paths, Set<String> rejoinFrom, Map<String, Set<String>> enteredFrom) {
            this.paths = paths;
            this.rejoinFrom = rejoinFrom;
            this.enteredFrom = enteredFrom;
        }

        List<String> subscribed() { return paths.get("subscribed"); }
        List<String> inAssign() { return paths.get("in_assign"); }
        List<String> inRevoke() { return paths.get("in_revoke"); }
        List<String> afterRevoke() { return paths.get("after_revoke"); }
        List<String> inLost() { return paths.get("in_lost"); }
        List<String> afterLost() { return paths.get("after_lost"); }
        List<String> stable() { return paths.get("stable"); }
        List<String> leaveStart() { return paths.get("leave_start"); }
        List<String> leaveAfterRevoke() { return paths.get("leave_after_revoke"); }
        List<String> left() { return paths.get("left"); }

        Set<String> rejoinFrom() {
            return rejoinFrom;
        }

        String initial() {
            List<String> left = left();
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
        Map<String, List<String>> paths = new HashMap<>();
        for (String name : spec.pathNames()) {
            paths.put(name, spec.path(name, protocol));
        }
        return new Lifecycle(paths, spec.rejoinFrom(protocol), spec.enteredFrom(protocol));
    }
}

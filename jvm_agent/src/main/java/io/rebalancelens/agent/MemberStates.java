package io.rebalancelens.agent;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The member state machines of consumer_agent/member_states.py and the paths of consumer_agent/lifecycle.py,
 * per group protocol: which state each thing the agent observes leads to. tests/jvm_agent checks every
 * transition this agent reports against the Python tables, so the two agents cannot drift apart silently.
 */
final class MemberStates {
    private MemberStates() {}

    /** State paths (entered in order) for each observation; {@code rejoinFrom}: a new assignment there is a rejoin. */
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

    private static final Set<String> CLASSIC_ALL = Set.of("unsubscribed", "joining", "assigning", "revoking", "stable",
            "lost", "stale", "leaving");

    static final Lifecycle CLASSIC = new Lifecycle(List.of("joining"), List.of("assigning"), List.of("revoking"),
            List.of("joining"), List.of("lost"), List.of("joining"), List.of("stable"), List.of("leaving"),
            List.of("leaving"), List.of("unsubscribed"), Set.of("unsubscribed", "stale", "lost"),
            Map.of("unsubscribed", Set.of("leaving", "joining", "stable"),
                   "joining", Set.of("unsubscribed", "stable", "revoking", "lost", "stale", "assigning"),
                   "assigning", Set.of("joining", "stable"),
                   "revoking", Set.of("stable", "joining", "leaving"),
                   "stable", Set.of("assigning", "revoking", "joining"),
                   "lost", Set.of("stable", "joining", "assigning", "revoking", "stale"),
                   "stale", Set.of("stable", "joining", "assigning"),
                   "leaving", Set.of("stable", "joining", "assigning", "revoking", "lost", "stale", "unsubscribed"),
                   "fatal", CLASSIC_ALL));

    /** KIP-848, as the Java client's MemberState.java. */
    static final Lifecycle CONSUMER = new Lifecycle(List.of("joining"), List.of("reconciling"), List.of("reconciling"),
            List.of("stable"), List.of("fenced"), List.of("joining"), List.of("stable"), List.of("prepare_leaving"),
            List.of("prepare_leaving"), List.of("leaving", "unsubscribed"), Set.of("stale", "fenced", "unsubscribed"),
            Map.of("unsubscribed", Set.of("prepare_leaving", "leaving", "fenced"),
                   "joining", Set.of("fenced", "unsubscribed", "stale"),
                   "reconciling", Set.of("stable", "joining", "acknowledging", "reconciling"),
                   "acknowledging", Set.of("reconciling"),
                   "stable", Set.of("joining", "acknowledging", "reconciling"),
                   "fenced", Set.of("joining", "stable", "reconciling", "acknowledging", "prepare_leaving", "leaving"),
                   "prepare_leaving", Set.of("joining", "stable", "reconciling", "acknowledging", "unsubscribed"),
                   "leaving", Set.of("prepare_leaving"),
                   "stale", Set.of("leaving"),
                   "fatal", Set.of("joining", "stable", "reconciling", "acknowledging", "prepare_leaving", "leaving",
                                   "unsubscribed")));

    static Lifecycle of(String groupProtocol) {
        return "consumer".equals(groupProtocol) ? CONSUMER : CLASSIC;
    }
}

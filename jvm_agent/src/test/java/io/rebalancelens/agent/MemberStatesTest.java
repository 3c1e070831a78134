package io.rebalancelens.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The state tables and paths are the spec's, and every path walks transitions its own table allows. */
class MemberStatesTest {
    private static void walksAllowed(MemberStates.Lifecycle lifecycle, List<String> path) {
        for (int i = 1; i < path.size(); i++) {
            assertTrue(lifecycle.allowed(path.get(i - 1), path.get(i)), path::toString);
        }
    }

    @Test
    void classicIsLibrdkafkasJoinStatesAsTheApplicationSeesThem() {
        MemberStates.Lifecycle classic = MemberStates.of("classic");
        assertSame(MemberStates.CLASSIC, classic);
        assertEquals("unsubscribed", classic.initial());
        assertEquals(List.of("assigning"), classic.inAssign());
        assertEquals(List.of("lost"), classic.inLost());
        assertTrue(classic.allowed("stable", "revoking") && classic.allowed("assigning", "stable"));
        assertFalse(classic.allowed("leaving", "stable"));
        assertFalse(classic.allowed("fatal", "stable"));  // nothing leaves fatal
        assertTrue(classic.allowed("stale", "fatal"));
    }

    @Test
    void kip848IsTheJavaClientsMemberState() {
        MemberStates.Lifecycle consumer = MemberStates.of("consumer");
        assertSame(MemberStates.CONSUMER, consumer);
        assertEquals(List.of("leaving", "unsubscribed"), consumer.left());
        assertEquals("unsubscribed", consumer.initial());
        walksAllowed(consumer, consumer.left());
        assertTrue(consumer.allowed("reconciling", "reconciling") && consumer.allowed("leaving", "stale"));
        assertFalse(consumer.allowed("stable", "leaving"));  // through prepare_leaving only
    }

    @Test
    void thePathsWalkAllowedTransitions() {
        for (MemberStates.Lifecycle lifecycle : List.of(MemberStates.CLASSIC, MemberStates.CONSUMER)) {
            for (List<String> path : List.of(lifecycle.subscribed(), lifecycle.inAssign(), lifecycle.inRevoke(),
                    lifecycle.afterRevoke(), lifecycle.inLost(), lifecycle.afterLost(), lifecycle.stable(),
                    lifecycle.leaveStart(), lifecycle.leaveAfterRevoke(), lifecycle.left())) {
                walksAllowed(lifecycle, path);
            }
        }
    }

    @Test
    void theReasonsAreTheSpecs() {
        assertEquals("close", Membership.CLOSE);
        assertEquals("unsubscribe", Membership.UNSUBSCRIBE);
        assertEquals("revoke callback (leaving)", MemberStates.reason("revoked_leaving"));
    }
}

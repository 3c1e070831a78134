package io.rebalancelens.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** The client's auto commits told from the application's, among what the CommitWitness heard. */
class CommitLedgerTest {
    private static final TopicPartition TP = new TopicPartition("orders", 0);
    private final CommitWitness[] witness = new CommitWitness[1];
    private final CommitWitness.Slot slot = CommitWitness.around(new HashMap<>(),
            () -> witness[0] = new CommitWitness());

    private static Map<TopicPartition, OffsetAndMetadata> at(long offset) {
        return Map.of(TP, new OffsetAndMetadata(offset));
    }

    private void witnessed(long offset) {
        witness[0].onCommit(at(offset));
    }

    @Test
    void withoutAutoCommitsEveryCommitIsTheApplicationsAndASyncOneIsTheLastReport() {
        CommitLedger ledger = new CommitLedger(slot, false);
        witnessed(3);
        assertEquals(List.of(), ledger.autoCommits());
        witnessed(5);
        witnessed(7);
        List<Map<TopicPartition, OffsetAndMetadata>> auto = new ArrayList<>();
        assertEquals(at(7), ledger.afterSync(null, auto));  // commitSync(): the client's own choice, reported last
        assertEquals(List.of(), auto);
    }

    @Test
    void anAutoCommitWitnessedDuringASyncCommitIsReportedAsOne() {
        CommitLedger ledger = new CommitLedger(slot, true);
        witnessed(4);
        witnessed(9);
        List<Map<TopicPartition, OffsetAndMetadata>> auto = new ArrayList<>();
        assertEquals(at(9), ledger.afterSync(at(9), auto));
        assertEquals(List.of(at(4)), auto);
        assertFalse(ledger.pending());
    }

    @Test
    void anAutoCommitOfNothingIsNoCommit() {
        CommitLedger ledger = new CommitLedger(slot, true);
        witness[0].onCommit(Map.of());
        witnessed(2);
        assertEquals(List.of(at(2)), ledger.autoCommits());
    }

    @Test
    void anAsynchronousCommitOfTheApplicationIsTakenOutOnceAndOnlyOnce() {
        CommitLedger ledger = new CommitLedger(slot, true);
        CommitLedger.Expected mine = ledger.asyncStarted(at(6));
        witnessed(5);  // the client's
        witnessed(6);  // the application's, reported by its callback
        ledger.asyncDone(mine);
        witnessed(8);
        assertEquals(List.of(at(5), at(8)), ledger.autoCommits());
        assertEquals(List.of(), ledger.autoCommits());
    }

    @Test
    void anAsynchronousCommitOfEveryPositionTakesTheFirstReportAfterIt() {
        CommitLedger ledger = new CommitLedger(slot, true);
        CommitLedger.Expected mine = ledger.asyncStarted(null);
        witnessed(6);
        witnessed(8);
        assertEquals(List.of(at(8)), ledger.autoCommits());
        ledger.asyncDone(mine);
        assertEquals(List.of(), ledger.autoCommits());
    }

    @Test
    void aFailedAsynchronousCommitIsExpectedNoMore() {
        CommitLedger ledger = new CommitLedger(slot, true);
        ledger.asyncDone(ledger.asyncStarted(at(6)));  // failed: never witnessed
        witnessed(6);  // an auto commit of the same offsets later
        assertEquals(List.of(at(6)), ledger.autoCommits());
    }
}

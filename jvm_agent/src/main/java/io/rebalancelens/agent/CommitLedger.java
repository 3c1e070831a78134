package io.rebalancelens.agent;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Tells the client's own commits from the application's among those the {@link CommitWitness} saw, on the
 * application's thread. The application's are reported by the calls that made them (a synchronous commit when it
 * returns, an asynchronous one from its callback); every other commit witnessed is an auto commit
 * ({@code enable.auto.commit}), reported as such when the application's thread next passes the agent: a poll, a
 * rebalance callback (the client's synchronous auto commit before a revoke is witnessed by then), a commit of its
 * own, or close. Without auto commits every witnessed commit is the application's. An auto commit of nothing (the
 * classic client tells its interceptors of one when it has no position yet) is no commit, as librdkafka says.
 */
final class CommitLedger {
    private final CommitWitness.Slot slot;
    private final boolean autoCommit;
    /** The application's asynchronous commits whose callback has not run yet. */
    private final List<Expected> expected = new ArrayList<>();
    /** Auto commits found while looking for an asynchronous commit's report, not handed out yet. */
    private final List<Map<TopicPartition, OffsetAndMetadata>> carried = new ArrayList<>();

    /** One asynchronous commit of the application: its offsets (null: the client's choice), and whether seen. */
    static final class Expected {
        final Map<TopicPartition, OffsetAndMetadata> offsets;
        boolean witnessed;

        Expected(Map<TopicPartition, OffsetAndMetadata> offsets) {
            this.offsets = offsets;
        }
    }

    CommitLedger(CommitWitness.Slot slot, boolean autoCommit) {
        this.slot = slot;
        this.autoCommit = autoCommit;
    }

    /** Something was witnessed since the last look (the poll path's cheap question). */
    boolean pending() {
        return slot.pending() || !carried.isEmpty();
    }

    /** The application started an asynchronous commit of {@code offsets} (null: every position); its token. */
    Expected asyncStarted(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Expected commit = new Expected(offsets);
        if (autoCommit) {
            expected.add(commit);
        }
        return commit;
    }

    /** Its callback ran (a successful commit was witnessed before it): it is expected no more. */
    void asyncDone(Expected commit) {
        if (autoCommit) {
            carried.addAll(autoCommits());
            expected.remove(commit);
        }
    }

    /** The auto commits witnessed since the last look, oldest first. */
    List<Map<TopicPartition, OffsetAndMetadata>> autoCommits() {
        List<Map<TopicPartition, OffsetAndMetadata>> auto = new ArrayList<>(carried);
        carried.clear();
        for (Map<TopicPartition, OffsetAndMetadata> offsets : slot.drain()) {
            if (autoCommit && !offsets.isEmpty() && !applicationsAsync(offsets)) {
                auto.add(offsets);
            }
        }
        return auto;
    }

    /**
     * After the application's synchronous commit of {@code requested} (null: every position) succeeded: what it
     * committed (the client's last report before commitSync returned, else what was requested); the other commits
     * witnessed meanwhile go to {@code autoCommits}.
     */
    Map<TopicPartition, OffsetAndMetadata> afterSync(Map<TopicPartition, OffsetAndMetadata> requested,
                                                    List<Map<TopicPartition, OffsetAndMetadata>> autoCommits) {
        List<Map<TopicPartition, OffsetAndMetadata>> witnessed = slot.drain();
        int own = requested == null ? witnessed.size() - 1 : witnessed.lastIndexOf(requested);
        for (int i = 0; i < witnessed.size(); i++) {
            if (i != own && autoCommit && !witnessed.get(i).isEmpty() && !applicationsAsync(witnessed.get(i))) {
                autoCommits.add(witnessed.get(i));
            }
        }
        return own >= 0 ? witnessed.get(own) : requested != null ? requested : Map.of();
    }

    /** Whether {@code offsets} are the report of an asynchronous commit of the application's (then marked seen). */
    private boolean applicationsAsync(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Expected any = null;
        for (Expected commit : expected) {
            if (!commit.witnessed && offsets.equals(commit.offsets)) {
                commit.witnessed = true;
                return true;
            }
            any = any == null && !commit.witnessed && commit.offsets == null ? commit : any;
        }
        if (any != null) {
            any.witnessed = true;
        }
        return any != null;
    }
}
